"""The forecast service (``attn-forecast serve``): the request and answer schemas, the app, the
model session and the versioned artifacts it serves (docs/serve.md)."""
