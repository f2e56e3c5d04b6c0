// A throwaway certificate authority and a server certificate for 127.0.0.1 and localhost, made with this machine's
// openssl in a directory of the test's own: what a TLS Redis of the test's own serves and its clients trust.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

export interface TestTls {
  /** The CA's certificate: REDIS_TLS_CA_FILE, and `--tls-ca-cert-file`. */
  caFile: string;
  /** Its PEM text: FleetClient's `redisTlsCa`. */
  ca: string;
  certFile: string;
  keyFile: string;
  close(): Promise<void>;
}

const run = promisify(execFile);

export async function makeTestTls(): Promise<TestTls> {
  const dir = await mkdtemp(join(tmpdir(), 'af-tls-'));
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => run('openssl', args);
  try {
    const days = ['-days', '2'];
    await openssl(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      ...days,
      '-subj',
      '/CN=agent-fleet test CA',
      '-keyout',
      file('ca.key'),
      '-out',
      file('ca.crt'),
    );
    await openssl(
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      '/CN=localhost',
      '-keyout',
      file('redis.key'),
      '-out',
      file('redis.csr'),
    );
    await writeFile(file('san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
    await openssl(
      'x509',
      '-req',
      '-in',
      file('redis.csr'),
      '-CA',
      file('ca.crt'),
      '-CAkey',
      file('ca.key'),
      '-CAcreateserial',
      ...days,
      '-extfile',
      file('san.ext'),
      '-out',
      file('redis.crt'),
    );
    return {
      caFile: file('ca.crt'),
      ca: await readFile(file('ca.crt'), 'utf8'),
      certFile: file('redis.crt'),
      keyFile: file('redis.key'),
      close: () => rm(dir, { recursive: true, force: true }),
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`openssl could not make the test certificates: ${(error as Error).message}`);
  }
}
