"""The chat room: what any transport does with a message (commands, order per chat, reminders)."""
