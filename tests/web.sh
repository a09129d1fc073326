# Web origins for the record/replay tests, added to the test world of lib.sh (call after
# world_create; world_destroy removes them with it).
#
#   world --- server host (10.77.0.2, DNS) ---+--- origin a.test     10.78.1.2  (namespace mmt-oa$$)
#                                             +--- origin b.test     10.78.2.2  (www.b.test too)
#                                             `--- origin c.test     10.78.3.2
#
# Each origin is a real nginx (Debian's) on ports 80 and 443, HTTPS with SNI-only virtual hosts
# (a handshake without a known name is refused), certificates from a test CA ($ORIGIN_CA).

ORIGINS="a b c"

origin_ip() { case "$1" in a) echo 10.78.1.2 ;; b) echo 10.78.2.2 ;; c) echo 10.78.3.2 ;; esac; }

origins_create() {
  [ -n "${ORIGIN_CA:-}" ] && return 0
  local web=$WORLD_TMP/web
  mkdir -p "$web"
  ip netns exec "$SERVER" sysctl -qw net.ipv4.ip_forward=1
  # The origins' CA and one certificate per host name.
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj "/CN=Test origins CA" \
    -keyout "$web/ca.key" -out "$web/ca.pem" -addext "basicConstraints=critical,CA:TRUE" 2>/dev/null || return 1
  ORIGIN_CA=$web/ca.pem
  local o i=0 names
  for o in $ORIGINS; do
    i=$((i + 1))
    local ns=mmt-o$o$$ ip; ip=$(origin_ip "$o")
    ip netns add "$ns"
    ip link add "mmt-o$o$$" netns "$SERVER" type veth peer name eth0 netns "$ns"
    ip -n "$SERVER" addr add "10.78.$i.1/30" dev "mmt-o$o$$"
    ip -n "$SERVER" link set "mmt-o$o$$" up
    ip -n "$ns" addr add "$ip/30" dev eth0
    ip -n "$ns" link set lo up
    ip -n "$ns" link set eth0 up
    ip -n "$ns" route add default via "10.78.$i.1"
    names="$o.test"; [ "$o" = b ] && names="b.test www.b.test"
    local d=$web/$o n
    mkdir -p "$d/tmp"
    for n in $names; do
      printf '%s %s\n' "$ip" "$n" >> "$WORLD_TMP/hosts"
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$n" -keyout "$d/$n.key" \
        -out "$d/$n.csr" 2>/dev/null &&
        openssl x509 -req -in "$d/$n.csr" -CA "$web/ca.pem" -CAkey "$web/ca.key" -CAcreateserial -days 30 \
          -extfile <(printf 'subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n' "$n") -out "$d/$n.pem" 2>/dev/null ||
        return 1
      origin_content "$d/www/$n" "$n"
    done
    origin_nginx_conf "$d" "$ip" $names > "$d/nginx.conf"
    ip netns exec "$ns" nginx -c "$d/nginx.conf" -e "$d/error.log" || { cat "$d/error.log" >&2; return 1; }
    ORIGIN_NAMESPACES="${ORIGIN_NAMESPACES:-} $ns"
  done
  kill -HUP "$WORLD_DNSMASQ"  # reread the hosts file
  for _ in $(seq 50); do
    in_world curl -sf -o /dev/null http://c.test/ && in_world getent hosts www.b.test >/dev/null && return 0
    sleep 0.1
  done
  echo "web origins did not start" >&2
  return 1
}

origins_destroy() {
  local ns pid
  for ns in ${ORIGIN_NAMESPACES:-}; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  ORIGIN_NAMESPACES= ORIGIN_CA=
}

# The site of one host name: a page whose subresources are spread over every origin.
origin_content() {  # DIR NAME
  mkdir -p "$1/upload"
  cat > "$1/index.html" <<EOF
<!doctype html>
<html><head><title>$2</title>
<link rel="stylesheet" href="https://b.test/style.css">
<script src="https://c.test/app.js"></script>
<script src="http://a.test/plain.js"></script>
</head><body><h1>$2</h1>
<img src="https://www.b.test/pixel.png" alt="">
<img src="https://c.test/pixel.png?v=1" alt="">
<img src="http://c.test/pixel.png?v=2" alt="">
</body></html>
EOF
  local k
  { echo "/* $2 */"; for k in $(seq 200); do echo ".rule$k { margin: ${k}px; }"; done; } > "$1/style.css"
  { echo "// $2"; for k in $(seq 200); do echo "var v$k = $k;"; done; echo "document.title += ' (app)';"; } > "$1/app.js"
  echo "document.title += ' (plain)';" > "$1/plain.js"
  # A 1x1 PNG.
  printf '\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\1\0\0\0\1\x08\x06\0\0\0\x1f\x15\xc4\x89\0\0\0\rIDATx\x9cc\xf8\xff\xff?\0\x05\xfe\x02\xfe\xa7\x35\x81\x84\0\0\0\0IEND\xaeB`\x82' > "$1/pixel.png"
  truncate -s 200M "$1/big.bin"
  chmod -R a+rwX "$1"
}

origin_nginx_conf() {  # DIR IP NAME...
  local d=$1 ip=$2; shift 2
  cat <<EOF
daemon on;
user root;
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $d/tmp/body;
  proxy_temp_path $d/tmp/proxy;
  fastcgi_temp_path $d/tmp/fastcgi;
  uwsgi_temp_path $d/tmp/uwsgi;
  scgi_temp_path $d/tmp/scgi;
  types { text/html html; text/css css; application/javascript js; image/png png; application/octet-stream bin; }
  default_type application/octet-stream;
  gzip on;
  gzip_types text/css application/javascript;
  gzip_min_length 100;
  keepalive_requests 10000;
  client_max_body_size 64m;
  server { listen $ip:443 ssl default_server; ssl_reject_handshake on; }
EOF
  local n
  for n in "$@"; do
    cat <<EOF
  server {
    listen $ip:80;
    listen $ip:443 ssl;
    server_name $n;
    ssl_certificate $d/$n.pem;
    ssl_certificate_key $d/$n.key;
    root $d/www/$n;
    location = /form { return 200 "form received\n"; }
    location /upload/ { dav_methods PUT DELETE; create_full_put_path on; }
  }
EOF
  done
  echo "}"
}
