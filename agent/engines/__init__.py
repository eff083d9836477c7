"""Reply engines: a packet and a message in, a Reply out; never the database."""
