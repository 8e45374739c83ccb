"""The application layer: catalogs per endpoint, identity, and the async driver of sessions."""
