"""The wire: every JSON-RPC method's params and result as msgspec Structs,
the JSON-RPC 2.0 envelope, LSP base-protocol framing, the error codes and the
one method table both endpoints dispatch through. The only place a wire shape
is spelled."""
