#!/bin/sh
# Makes a throw-away CA and a server certificate for the TLS compose example (docker-compose.tls.yml), with
# openssl. Never commit what it writes. Usage: deploy/tls/make-certs.sh [DIR] (default: this script's directory).
set -eu
dir=${1:-$(dirname "$0")}
cd "$dir"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 365 \
  -keyout ca.key -out ca.crt -subj "/CN=cdn-exporter compose CA" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -keyout server.key -out server.csr -subj "/CN=exporter" 2>/dev/null
printf 'subjectAltName=DNS:exporter,DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 \
  -extfile server.ext -out server.crt 2>/dev/null
rm -f server.csr server.ext ca.srl
# The exporter runs as a non-root user in the image: it must be able to read the key.
chmod 0644 server.key
echo "wrote $(pwd)/ca.crt server.crt server.key"
