"""The servers and the command line: the lean harness endpoint, the pygls
editor endpoint, background job control and `mecha-sidecar <verb>`."""
