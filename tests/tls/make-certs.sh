#!/usr/bin/env bash
# make-certs.sh DIR: the certificates the tests of `segflake serve --tls-*` and its HTTPS
# clients use, made afresh (EC P-256, valid for two days unless said otherwise):
#   ca.pem ca.key            the CA that signs everything below
#   other-ca.pem             an unrelated CA (a client that trusts it must be refused)
#   server.pem server.key    the server: DNS:localhost, IP:127.0.0.1 (not 127.0.0.2)
#   server2.pem server2.key  a second server certificate for the same names (a rotation)
#   server-expired.pem .key  the server's names, expired in 2020
#   order.pem order.key      client CN=order-svc, SAN DNS:order-svc, URI:spiffe://segflake.test/order
#   billing.pem billing.key  client CN=billing-svc (trusted, allowed only where listed)
#   client-expired.pem .key  client CN=order-svc, expired in 2020
#   stranger.pem stranger.key client CN=order-svc signed by other-ca (untrusted)
set -euo pipefail
d=${1:?usage: make-certs.sh DIR}
mkdir -p "$d"
cd "$d"
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
q() { "$@" 2>/dev/null; }
q openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 2 -subj /CN=segflake-test-ca \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
q openssl req -x509 "${ec[@]}" -keyout other-ca.key -out other-ca.pem -days 2 \
  -subj /CN=segflake-unrelated-ca -addext basicConstraints=critical,CA:TRUE \
  -addext keyUsage=critical,keyCertSign,cRLSign
# A minimal `openssl ca` set-up, for certificates with given dates (the expired ones).
mkdir -p ca.db
: >ca.db/index.txt
printf '%s\n' "[ca]" "default_ca=test" "[test]" "database=ca.db/index.txt" \
  "new_certs_dir=ca.db" "serial=ca.db/serial" "default_md=sha256" "policy=any" \
  "unique_subject=no" "copy_extensions=copy" "[any]" "commonName=supplied" >ca.cnf
echo 1000 >ca.db/serial
# sign NAME SUBJECT EXTENSIONS CA [START END]: NAME.key and NAME.pem.
sign() {
  local name=$1 subj=$2 ext=$3 ca=$4
  q openssl req "${ec[@]}" -keyout "$name.key" -out "$name.csr" -subj "$subj"
  printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=digitalSignature,keyEncipherment" \
    "$ext" >"$name.ext"
  if [[ $# -gt 4 ]]; then
    q openssl ca -batch -config ca.cnf -cert "$ca.pem" -keyfile "$ca.key" -in "$name.csr" \
      -out "$name.pem" -startdate "$5" -enddate "$6" -extfile "$name.ext" -notext
  else
    q openssl x509 -req -in "$name.csr" -CA "$ca.pem" -CAkey "$ca.key" -CAcreateserial \
      -days 2 -extfile "$name.ext" -out "$name.pem"
  fi
  rm -f "$name.csr" "$name.ext"
}
server_ext="subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth"
client_ext="subjectAltName=DNS:order-svc,URI:spiffe://segflake.test/order
extendedKeyUsage=clientAuth"
sign server /CN=localhost "$server_ext" ca
sign server2 /CN=localhost "$server_ext" ca
sign server-expired /CN=localhost "$server_ext" ca 20200101000000Z 20200102000000Z
sign order /CN=order-svc "$client_ext" ca
sign billing /CN=billing-svc "subjectAltName=DNS:billing-svc
extendedKeyUsage=clientAuth" ca
sign client-expired /CN=order-svc "$client_ext" ca 20200101000000Z 20200102000000Z
sign stranger /CN=order-svc "$client_ext" other-ca
rm -rf ca.db ca.cnf ./*.srl
chmod 644 ./*.pem ./*.key
