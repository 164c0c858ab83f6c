#!/usr/bin/env bash
# Starts a 3-member etcd cluster on 127.0.0.1 (free ports, data in a temporary directory), waits
# until every member is healthy, runs the given command with the cluster described in its
# environment, and tears the cluster down when the command ends, also when it fails or is
# interrupted. Exits with the command's status.
#
#   scripts/etcd-cluster.sh cargo test -p tenure-etcd
#
# The command sees:
#   TENURE_ETCD_ENDPOINTS    host:port,host:port,host:port (the members' client addresses)
#   TENURE_ETCD_CLUSTER_DIR  a directory with, for member N in 1..3: member-N.pid (its
#                            process id) and member-N.sh (starts it again, same data and
#                            ports), so fault tests can kill -9 a member and bring it back.
# Needs etcd 3.4 (Debian: apt-get install -y etcd-server).
set -euo pipefail

if [ "$#" -eq 0 ]; then
    echo "usage: $0 COMMAND [ARGS...]" >&2
    exit 2
fi
ETCD=${ETCD:-$(command -v etcd || true)}
if [ -z "$ETCD" ]; then
    echo "etcd-cluster: etcd is not installed (apt-get install -y etcd-server)" >&2
    exit 2
fi

cluster_dir=$(mktemp -d "${TMPDIR:-/tmp}/tenure-etcd.XXXXXX")
stop_cluster() {
    for pid_file in "$cluster_dir"/member-*.pid; do
        [ -e "$pid_file" ] || continue
        kill -9 "$(cat "$pid_file")" 2>/dev/null || true
    done
    # Members restarted by a test write their new pid to the same file: wait for all to go.
    for pid_file in "$cluster_dir"/member-*.pid; do
        [ -e "$pid_file" ] || continue
        for _ in $(seq 1 50); do
            kill -0 "$(cat "$pid_file")" 2>/dev/null || break
            sleep 0.1
        done
    done
    rm -rf "$cluster_dir"
}
trap stop_cluster EXIT
trap 'exit 130' INT TERM

# Six free ports: three for clients, three for peers.
read -r -a ports <<<"$(python3 - <<'PY'
import socket
sockets = [socket.socket() for _ in range(6)]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in sockets))
for s in sockets:
    s.close()
PY
)"

initial_cluster=""
for n in 1 2 3; do
    peer=${ports[$((n + 2))]}
    initial_cluster+="${initial_cluster:+,}m$n=http://127.0.0.1:$peer"
done

endpoints=""
for n in 1 2 3; do
    client=${ports[$((n - 1))]}
    peer=${ports[$((n + 2))]}
    cat >"$cluster_dir/member-$n.sh" <<SH
#!/usr/bin/env bash
# Starts member m$n (again): its data stays in $cluster_dir/m$n.
exec "$ETCD" --name m$n --data-dir "$cluster_dir/m$n" \\
    --listen-client-urls http://127.0.0.1:$client --advertise-client-urls http://127.0.0.1:$client \\
    --listen-peer-urls http://127.0.0.1:$peer --initial-advertise-peer-urls http://127.0.0.1:$peer \\
    --initial-cluster $initial_cluster --initial-cluster-state new \\
    --initial-cluster-token tenure-test --heartbeat-interval 50 --election-timeout 500 \\
    --logger zap --log-outputs "$cluster_dir/m$n.log" \\
    >>"$cluster_dir/m$n.out" 2>&1
SH
    chmod +x "$cluster_dir/member-$n.sh"
    "$cluster_dir/member-$n.sh" &
    echo $! >"$cluster_dir/member-$n.pid"
    disown
    endpoints+="${endpoints:+,}127.0.0.1:$client"
done

# Healthy: every member reports health, which etcd 3.4 does once the cluster has a leader.
healthy() {
    python3 - "$endpoints" <<'PY'
import json, sys, urllib.request
for endpoint in sys.argv[1].split(","):
    try:
        with urllib.request.urlopen(f"http://{endpoint}/health", timeout=1) as response:
            if json.load(response).get("health") != "true":
                sys.exit(1)
    except Exception:
        sys.exit(1)
PY
}
for _ in $(seq 1 100); do
    if healthy; then
        echo "etcd-cluster: 3 members healthy at $endpoints" >&2
        export TENURE_ETCD_ENDPOINTS=$endpoints TENURE_ETCD_CLUSTER_DIR=$cluster_dir
        set +e
        "$@"
        status=$?
        set -e
        exit "$status"
    fi
    sleep 0.1
done
echo "etcd-cluster: the cluster did not become healthy in 10 s; member logs:" >&2
tail -n 20 "$cluster_dir"/m*.log "$cluster_dir"/m*.out >&2 || true
exit 1
