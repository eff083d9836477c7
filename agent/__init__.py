"""A Telegram bot whose conversation memory is crash-safe by construction."""

__version__ = "0.1.0"
