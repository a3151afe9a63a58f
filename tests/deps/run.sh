#!/bin/sh
# `make deps-scan` (part of `make test`): every command and Python module
# the helpers the makefiles run use is one a fresh machine has
# (tests/deps/fresh-commands) or one the Makefile installs (NEEDS, its
# ALL_NEEDS); then the scan is held to what it must find:
#   - the same list with py/numpy taken out must fail, naming numpy and the
#     helper that imports it (tests/hfref/make_dir.py);
#   - a made-up helper that runs jq, imports yaml in a here-document and
#     sources a library must fail naming both, and nothing else (not the
#     words of arithmetic, case patterns, quoted text or here-documents).
#   sh tests/deps/run.sh "NEEDS" MAKEFILE...
set -u
needs=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
has=$(grep -v '^#' "$here/fresh-commands")
fail=0
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# 1. the real helpers against the real list
/usr/bin/python3 "$here/scan.py" --has "$has" --installs "$needs" "$@" || fail=1

# 2. numpy taken out of the list
without=$(printf '%s\n' $needs | grep -v '^py/numpy:' | tr '\n' ' ')
if /usr/bin/python3 "$here/scan.py" --has "$has" --installs "$without" "$@" > "$TMP/out"; then
    echo "FAIL: deps-scan passed with py/numpy left out of the install list"; fail=1
elif ! grep -q "tests/hfref/make_dir.py:[0-9]*: Python module 'numpy'" "$TMP/out"; then
    echo "FAIL: deps-scan without numpy did not name tests/hfref/make_dir.py's import:"; sed 's/^/  /' "$TMP/out"; fail=1
fi

# 3. a made-up helper
mkdir -p "$TMP/h"
cat > "$TMP/h/lib.sh" <<'EOF'
helper() { grep -q x "$1"; }
EOF
cat > "$TMP/h/fake.sh" <<'EOF'
#!/bin/sh
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
i=$((i + 1)); n=$(( $(wc -l < f) * 2 ))
case $((i % 2)) in
    0) pass=1 ;; fancy|other) x=$(sed -n 1p f) ;;
esac
msg="a quoted text with jqq words; and $(printf '%s' "nested") parts
spanning lines"
cat <<DATA
notacommand here
DATA
helper f && timeout 5 jq . f 2>&1 | head -1   # a comment naming zzz
/usr/bin/python3 - f <<'PY'
import json, sys
import yaml
PY
EOF
if /usr/bin/python3 "$here/scan.py" --has "$has" --installs "" "$TMP/h/fake.sh" > "$TMP/out"; then
    echo "FAIL: deps-scan passed a helper that runs jq and imports yaml"; fail=1
else
    found=$(grep -o "command '[^']*'\|module '[^']*'" "$TMP/out" | sort | tr '\n' ' ')
    [ "$found" = "command 'jq' module 'yaml' " ] ||
        { echo "FAIL: deps-scan on the made-up helper found [$found], wanted [command 'jq' module 'yaml' ]"; fail=1; }
    grep -q "fake.sh:13: command 'jq'" "$TMP/out" && grep -q "fake.sh:16: Python module 'yaml'" "$TMP/out" ||
        { echo "FAIL: deps-scan named the wrong lines:"; sed 's/^/  /' "$TMP/out"; fail=1; }
fi
[ $fail = 0 ] && echo "deps-scan: the scan finds what is missing (numpy left out; jq and yaml in a made-up helper)"

# 4. make deps's graph (tests/deps/graph.py) on made-up objects: a.c and
# b.c call each other (a cycle, named with a symbol on each edge), c.c
# calls a.c only; without b.c's call back there is no cycle.
mkdir -p "$TMP/g"
printf 'int b_f(void);\nint a_g(void) { return 1; }\nint a_f(void) { return b_f(); }\n' > "$TMP/g/a.c"
printf 'int a_g(void);\nint b_f(void) { return a_g(); }\n' > "$TMP/g/b.c"
printf 'int a_f(void);\nint c_f(void) { return a_f(); }\n' > "$TMP/g/c.c"
printf 'int b_f(void) { return 2; }\n' > "$TMP/g/b2.c"
for f in a b c b2; do cc -c "$TMP/g/$f.c" -o "$TMP/g/$f.o" || fail=1; done
if /usr/bin/python3 "$here/graph.py" g "$TMP/g/a.o" "$TMP/g/b.o" "$TMP/g/c.o" > "$TMP/out"; then
    echo "FAIL: make deps's graph passed a.c <-> b.c"; fail=1
elif ! grep -q "CYCLE among 2 files: .*a\.c .*b\.c" "$TMP/out" ||
     ! grep -q "a\.c -\[b_f\]-> .*b\.c -\[a_g\]-> .*a\.c" "$TMP/out"; then
    echo "FAIL: make deps's graph did not name the cycle a.c -[b_f]-> b.c -[a_g]-> a.c:"; sed 's/^/  /' "$TMP/out"; fail=1
fi
/usr/bin/python3 "$here/graph.py" g "$TMP/g/a.o" "$TMP/g/b2.o" "$TMP/g/c.o" > "$TMP/out" ||
    { echo "FAIL: make deps's graph found a cycle in a one-way graph:"; sed 's/^/  /' "$TMP/out"; fail=1; }
[ $fail = 0 ] && echo "deps-scan: make deps's graph finds a made-up cycle, naming a symbol on each edge, and passes a one-way graph"
exit $fail
