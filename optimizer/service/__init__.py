"""The PIR service: the ctypes binding of a generated build, record files, the PIR server (no
HTTP), its HTTP front end, the HTTP API both sides share, and the client."""
