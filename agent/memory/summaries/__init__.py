"""The summary version chain: its store, the background model summarizer, the segment format."""
