#!/usr/bin/env bash
# Capture the pipe traffic of rpcclient, smbclient -L, Samba's Python client
# (samba_calls.py) and the raw probes (probes.py) against a server on 127.0.0.1:PORT,
# into OUTDIR/samba-*.txt in the format tests/golden.rs replays, with the answers smb3d
# gives instead of Samba's added by expected.py.
#
#   capture.sh PORT OUTDIR
#
# Start the reference server first: /work/shared/tools/ref-samba start PORT DIR, then add
# to DIR/smb.conf a share that is not browseable and a private RPC socket directory (Samba
# 4.17 serves pipes from samba-dcerpcd, which every smbd on the machine would otherwise share),
# and restart smbd (ref-samba stop DIR; smbd -s DIR/smb.conf -D):
#   [global]
#     ncalrpc dir = DIR/ncalrpc
#   [hidden]
#     path = DIR/share
#     comment = Not listed
#     browseable = no
set -euo pipefail
port=${1:?port}; out=${2:?outdir}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

capture() { # name command...
  local name=$1; shift
  tshark -i lo -f "tcp port $port" -w "$tmp/$name.pcap" >/dev/null 2>"$tmp/$name.tshark" &
  local pid=$!
  for _ in $(seq 100); do grep -q "Capturing on" "$tmp/$name.tshark" && break; sleep 0.2; done
  sleep 0.5
  "$@" >"$tmp/$name.log" 2>&1 || true
  sleep 1
  kill "$pid"; wait "$pid" 2>/dev/null || true
  "$here/pipe_exchanges.py" "$tmp/$name.pcap" "$port" >"$tmp/$name.txt"
}

header() { # file description
  /usr/bin/python3 "$here/expected.py" "$tmp/$1.txt" >"$tmp/$1.expected"
  { echo "# Captured from Samba $(smbd --version | sed 's/Version //') on 127.0.0.1 (tools/capture.sh)."
    echo "# $2"
    echo "# C: client bytes, S: Samba's answer, E: smb3d's answer where it differs (tools/expected.py)."
    cat "$tmp/$1.expected"; } >"$out/samba-$1.txt"
}

capture rpcclient rpcclient -p "$port" 127.0.0.1 -U bench%pass \
  -c 'netshareenumall; netsharegetinfo share; srvinfo; wkssvc_wkstagetinfo; lookupnames bench; lookupsids S-1-1-0; lsaquery'
header rpcclient "rpcclient -c 'netshareenumall; netsharegetinfo share; srvinfo; wkssvc_wkstagetinfo; lookupnames bench; lookupsids S-1-1-0; lsaquery'"

capture smbclient smbclient -L //127.0.0.1 -p "$port" -U bench%pass
header smbclient "smbclient -L //127.0.0.1 -U bench%pass"

capture pyclient /usr/bin/python3 "$here/samba_calls.py" "$port"
header pyclient "Samba's Python bindings (python3-samba) making the calls of tools/samba_calls.py"

python3 "$here/probes.py" "$port" >"$tmp/probes.txt"
header probes "Hand-made PDUs from tools/probes.py (smbprotocol), each case on its own pipe"
