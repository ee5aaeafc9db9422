"""Reading a request trace to replay (``reader``), one row at a time (``rows``)."""
