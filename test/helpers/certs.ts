/**
 * Certificates for tests, made at test time with Debian's openssl (never committed): a CA, and leaf certificates
 * it signs for a server (SANs localhost, 127.0.0.1, ::1) or a client. EC P-256 keys: fast to make.
 */
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface KeyPair {
  cert: string;
  key: string;
  /** SHA-256 fingerprint as Node prints it (`AB:CD:...`). */
  fingerprint: string;
}

export interface Pki {
  dir: string;
  ca: KeyPair;
  /** A certificate signed by this CA, written to `<name>.crt` and `<name>.key` in dir. */
  issue(name: string, options?: { sans?: string[]; client?: boolean }): KeyPair;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

function pair(dir: string, name: string): KeyPair {
  const cert = join(dir, `${name}.crt`);
  return {
    cert,
    key: join(dir, `${name}.key`),
    fingerprint: new X509Certificate(readFileSync(cert)).fingerprint256,
  };
}

/** A new CA in `dir` (named `name`, default `ca`). */
export function makePki(dir: string, name = 'ca'): Pki {
  openssl(
    [
      'req',
      '-x509',
      ...EC,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
      '-days',
      '2',
      '-subj',
      `/CN=cdn-exporter test ${name}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
  const ca = pair(dir, name);
  let serial = 0;
  return {
    dir,
    ca,
    issue(leaf, options = {}) {
      const sans =
        options.sans ?? (options.client ? [`DNS:${leaf}`] : ['DNS:localhost', 'IP:127.0.0.1', 'IP:::1']);
      const ext = join(dir, `${leaf}.ext`);
      writeFileSync(
        ext,
        `subjectAltName=${sans.join(',')}\nextendedKeyUsage=${options.client ? 'clientAuth' : 'serverAuth'}\nbasicConstraints=CA:FALSE\n`,
      );
      openssl(['req', ...EC, '-keyout', `${leaf}.key`, '-out', `${leaf}.csr`, '-subj', `/CN=${leaf}`], dir);
      serial++;
      openssl(
        [
          'x509',
          '-req',
          '-in',
          `${leaf}.csr`,
          '-CA',
          `${name}.crt`,
          '-CAkey',
          `${name}.key`,
          '-set_serial',
          String(Date.now() * 100 + serial),
          '-days',
          '2',
          '-extfile',
          ext,
          '-out',
          `${leaf}.crt`,
        ],
        dir,
      );
      return pair(dir, leaf);
    },
  };
}
