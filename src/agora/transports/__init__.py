"""Transports: WebSocket, Streamable HTTP and stdio. Bytes in, bytes out, nothing else."""
