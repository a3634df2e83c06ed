#!/usr/bin/env bash
# packaging/moonmqd.service passes `systemd-analyze verify` (with the built moonmqd standing in for /usr/bin/moonmqd),
# and keeps the settings operations.md relies on.
# Usage: systemd_unit_test.sh SOURCE_DIR MOONMQD_BINARY
set -euo pipefail
src=$1
bin=$2
work=$(mktemp -d /tmp/moonmq-unit-XXXXXX)
trap 'rm -rf "$work"' EXIT
sed "s#/usr/bin/moonmqd#$bin#g" "$src/packaging/moonmqd.service" > "$work/moonmqd.service"
out=$(systemd-analyze verify "$work/moonmqd.service" 2>&1 || true)
if [ -n "$out" ]; then
  echo "systemd-analyze verify complained:"
  echo "$out"
  exit 1
fi
for line in 'RestartPreventExitStatus=2' 'ExecStartPre=.*--check-config' 'NoNewPrivileges=yes' 'ProtectSystem=strict' \
            'KillSignal=SIGTERM' 'StateDirectory=moonmq'; do
  grep -q "^$line" "$src/packaging/moonmqd.service" || { echo "missing: $line"; exit 1; }
done
echo "unit verified"
