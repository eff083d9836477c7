"""Telegram: the only package that imports python-telegram-bot."""
