"""The smb3d benchmark harness: servers, clients, workloads and the report. Entry point: bench/run."""
