"""A bare python-telegram-bot echo bot: the floor under the throughput benchmark.

``python -m bench.ptb_echo``, with ``TELEGRAM_BOT_TOKEN`` and ``TELEGRAM_BASE_URL`` set, runs
PTB's stock ``Application.run_polling`` (its own getUpdates loop, updates handled concurrently,
the connection pool of ``run_bot.py``) with one handler that answers every text message with a
reply to it. Nothing is journaled, stored or checkpointed, and no order is kept within a chat:
what one turn costs here is what python-telegram-bot and httpx cost for one update in and one
message out, whatever a bot does with the message (``bench/throughput.py`` runs it under the
same load as the real bot).
"""

from __future__ import annotations

import os

from telegram import ReplyParameters, Update
from telegram.ext import Application, ContextTypes, MessageHandler, filters

from agent.telegram.bot import CONNECTION_POOL_SIZE


async def _echo(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    message = update.effective_message
    if message is not None and message.text:
        await message.reply_text(
            message.text, reply_parameters=ReplyParameters(message_id=message.message_id)
        )


def main() -> None:
    """Poll and echo until SIGTERM or SIGINT."""
    application = (
        Application.builder()
        .token(os.environ["TELEGRAM_BOT_TOKEN"])
        .base_url(os.environ["TELEGRAM_BASE_URL"])
        .concurrent_updates(True)
        .connection_pool_size(CONNECTION_POOL_SIZE)
        .pool_timeout(30)  # no retry here: a send must wait for a connection, not fail
        .build()
    )
    application.add_handler(MessageHandler(filters.TEXT, _echo))
    application.run_polling(timeout=1)


if __name__ == "__main__":
    main()
