#!/usr/bin/env bash
# driver.ssh_runner: measuring on another machine through ssh (driver.h,
# ingot_driver_measure_options_t.runner), against an sshd started here.
#
#   ssh_runner_test.sh TEST_MEASURE KERNEL_BUNDLE_TOOL INGOT_MEASURE CC SOURCE_ROOT WORK [INGOT]
#
# sshd (Debian openssh-server) runs on 127.0.0.1 with a port of its own, a
# host key, client key and config made in a temporary folder, and is stopped
# by its pid at the end, also on failure. Then
#   - test_measure --runner: good, wrong, crashing, hanging, failing and
#     corrupt bundles measured there come back as the same kinds as here, the
#     outputs' checksum equals a local measurement's, an unreachable port is
#     ERROR, malformed runners are refused;
#   - kernel_bundle_tool measure --runner (the command line): OK with sane
#     numbers, WRONG for a bundle with other outputs, ERROR for a closed port
#     and for a program that ends without a result line (its message kept),
#     a malformed runner refused (exit 2);
#   - ingot tune --runner (with INGOT, the 7th argument): the digits model
#     tuned with every candidate measured over ssh, its log complete;
#   - the remote temporary folders are gone afterwards.
# Skipped (exit 77) when sshd, ssh or ssh-keygen is missing.
set -euo pipefail
test_measure=$1 tool=$2 measure_bin=$3 cc=$4 src=$5 work=$6 ingot=${7:-}

skip() { echo "SKIP: $*"; exit 77; }
sshd=$(command -v sshd || true)
[ -z "$sshd" ] && [ -x /usr/sbin/sshd ] && sshd=/usr/sbin/sshd
[ -n "$sshd" ] || skip "no sshd (Debian openssh-server)"
command -v ssh >/dev/null || skip "no ssh"
command -v ssh-keygen >/dev/null || skip "no ssh-keygen"

rm -rf "$work" && mkdir -p "$work"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ingot-sshd.XXXXXX")
sshd_pid=
cleanup() {
  if [ -n "$sshd_pid" ]; then kill "$sshd_pid" 2>/dev/null || true; wait "$sshd_pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

user=$(id -un)
ssh-keygen -q -t ed25519 -N '' -f "$tmp/host_key" >/dev/null
ssh-keygen -q -t ed25519 -N '' -f "$tmp/client_key" >/dev/null
cp "$tmp/client_key.pub" "$tmp/authorized_keys"
chmod 600 "$tmp/authorized_keys"
# Privilege separation wants its empty folder (the Debian service makes it).
if [ "$(id -u)" = 0 ] && [ ! -d /run/sshd ]; then mkdir -p /run/sshd && chmod 755 /run/sshd; fi

# A free port: ask the kernel for one, then let sshd bind it (a race with
# another program is retried with another port).
free_port() {
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo 0
}

ssh_opts="-F /dev/null -i $tmp/client_key -o IdentitiesOnly=yes -o UserKnownHostsFile=$tmp/known_hosts -o StrictHostKeyChecking=accept-new"
started=0
for attempt in 1 2 3; do
  port=$(free_port)
  cat >"$tmp/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $port
HostKey $tmp/host_key
PidFile $tmp/sshd.pid
AuthorizedKeysFile $tmp/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
AllowUsers $user
X11Forwarding no
PrintMotd no
EOF
  "$sshd" -D -e -f "$tmp/sshd_config" >"$tmp/sshd.log" 2>&1 &
  sshd_pid=$!
  # Wait until it accepts a login (or died).
  for _ in $(seq 100); do
    if ! kill -0 "$sshd_pid" 2>/dev/null; then break; fi
    # shellcheck disable=SC2086
    if ssh $ssh_opts -o BatchMode=yes -o ConnectTimeout=2 -p "$port" "$user@127.0.0.1" true 2>/dev/null; then
      started=1
      break
    fi
    sleep 0.1
  done
  [ "$started" = 1 ] && break
  kill "$sshd_pid" 2>/dev/null || true
  wait "$sshd_pid" 2>/dev/null || true
  sshd_pid=
  echo "sshd on port $port did not come up:" >&2
  cat "$tmp/sshd.log" >&2
done
[ "$started" = 1 ] || { echo "FAIL: could not start sshd" >&2; exit 1; }
echo "sshd $sshd_pid listening on 127.0.0.1:$port"

export INGOT_SSH_OPTIONS="$ssh_opts"
export INGOT_MEASURE_BINARY="$measure_bin"
runner="ssh://$user@127.0.0.1:$port"
before=$(find /tmp -maxdepth 1 -name "ingot-measure.*" | wc -l)

"$test_measure" "$cc" "$src" "$work" --runner "$runner"

# The command line of the test tool, on the bundles test_measure wrote.
fail=0
check() { # NAME EXPECTED_KIND OUTPUT
  if ! grep -q "\"kind\": \"$2\"" <<<"$3"; then echo "FAIL: $1: expected $2, got: $3" >&2; fail=1; else echo "ok: $1: $3"; fi
}
out=$("$tool" measure "$work/copy.ingot" "$work/ref.ingot" --runner "$runner" --rounds 6 --seed 3)
check "tool copy" ok "$out"
python3 - "$out" <<'EOF' || fail=1
import json, sys
r = json.loads(sys.argv[1])
assert r["rounds"] == 6 and r["runs_per_repeat"] >= 1, r
assert 0 < r["candidate_ms"] < 1000 and 0 < r["reference_ms"] < 1000, r
assert 0.5 < r["ratio"] < 2 and r["ratio_min"] <= r["ratio_lo"] <= r["ratio_hi"] <= r["ratio_max"], r
EOF
out=$("$tool" measure "$work/wrong.ingot" "$work/ref.ingot" --runner "$runner")
check "tool wrong" wrong "$out"
out=$("$tool" measure "$work/copy.ingot" "$work/ref.ingot" --runner "ssh://$user@127.0.0.1:1")
check "tool closed port" error "$out"
# A program that fails without a result line: ERROR with what it said.
printf '#!/bin/sh\necho "no result today" >&2\nexit 3\n' >"$tmp/fake-measure"
chmod 755 "$tmp/fake-measure"
out=$(INGOT_MEASURE_BINARY="$tmp/fake-measure" "$tool" measure "$work/copy.ingot" "$work/ref.ingot" --runner "$runner")
check "no result line" error "$out"
grep -q "no result today" <<<"$out" || { echo "FAIL: the program's message is lost: $out" >&2; fail=1; }
set +e
out=$("$tool" measure "$work/copy.ingot" "$work/ref.ingot" --runner "ssh:/nowhere" 2>&1)
rc=$?
set -e
if [ "$rc" != 2 ] || ! grep -q "ssh:/nowhere" <<<"$out"; then
  echo "FAIL: a malformed runner: exit $rc, $out" >&2
  fail=1
fi

# The tuner measuring there: every record comes back, none failed.
if [ -n "$ingot" ]; then
  if ! "$ingot" tune "$src/models/digits/model.onnx" --input-shape input=1x1x8x8 -o "$work/remote.jsonl" \
      --trials 12 --runner "$runner" -q; then
    echo "FAIL: ingot tune --runner" >&2
    fail=1
  elif ! python3 - "$work/remote.jsonl" <<'EOF'
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert len(rs) == 12, len(rs)
assert all("error" not in r and r["time_ms"] > 0 for r in rs), [r.get("error") for r in rs]
print(f"ok: ingot tune --runner: {len(rs)} records measured over ssh")
EOF
  then
    fail=1
  fi
  set +e
  out=$("$ingot" tune "$src/models/digits/model.onnx" -o "$work/x.jsonl" --runner "ssh:/nowhere" 2>&1)
  rc=$?
  set -e
  if [ "$rc" != 2 ] || ! grep -q "ssh:/nowhere" <<<"$out"; then
    echo "FAIL: ingot tune with a malformed runner: exit $rc, $out" >&2
    fail=1
  fi
fi

after=$(find /tmp -maxdepth 1 -name "ingot-measure.*" | wc -l)
if [ "$after" != "$before" ]; then
  echo "FAIL: remote folders left behind: $before before, $after after" >&2
  fail=1
fi
[ "$fail" = 0 ] && echo "ssh runner: all checks passed"
exit "$fail"
