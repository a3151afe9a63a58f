#!/bin/sh
# The bad-input corpus (tests/badinput/README.md): every command line in
# cases.txt replayed against AS_BIN, each with its exit status, its message,
# and no file changed but the one it names. Arguments: case ids to run only
# those, --file F for another corpus (pending.txt), --keep to keep the scratch.
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/run.py" "$@"
