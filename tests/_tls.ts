/**
 * A local HTTPS peer for tests: a self-signed certificate for one host name (made with openssl,
 * which .ci/run installs), and the SafeFetcher that reaches it on 127.0.0.1 (loopback allowed: the
 * test allowance; the name resolved to 127.0.0.1; the certificate trusted).
 */
import assert from "node:assert/strict";
import { SafeFetcher } from "../core/net/safe_fetch.ts";

/** Certificates made so far, by host: an RSA key from openssl costs about 0.1 s of CPU. */
const certificates = new Map<string, Promise<{ cert: string; key: string }>>();

/** A self-signed certificate and key (PEM) for `host`, made once per test file. */
export function selfSignedCertificate(host: string): Promise<{ cert: string; key: string }> {
  let pair = certificates.get(host);
  if (!pair) {
    certificates.set(host, pair = makeCertificate(host));
    // A failure is not kept: the next test asks openssl again, and fails the same way.
    pair.catch(() => certificates.delete(host));
  }
  return pair;
}

async function makeCertificate(host: string): Promise<{ cert: string; key: string }> {
  const dir = await Deno.makeTempDir();
  try {
    const made = await new Deno.Command("openssl", {
      args: [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        `/CN=${host}`,
        "-addext",
        `subjectAltName=DNS:${host}`,
        "-addext",
        "basicConstraints=critical,CA:FALSE",
        "-keyout",
        `${dir}/key.pem`,
        "-out",
        `${dir}/cert.pem`,
      ],
      stdout: "null",
      stderr: "null",
    }).output().catch(() => null);
    // No certificate, no test: a missing openssl fails here instead of passing unseen.
    assert.ok(made?.success, "openssl could not make the test certificate: install openssl");
    return { cert: await Deno.readTextFile(`${dir}/cert.pem`), key: await Deno.readTextFile(`${dir}/key.pem`) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Serves `handler` over TLS on 127.0.0.1 as `https://<host>:<port>`. */
export async function serveTls(host: string, handler: (req: Request) => Response | Promise<Response>) {
  const { cert, key } = await selfSignedCertificate(host);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, cert, key, onListen() {} }, handler);
  const origin = `https://${host}:${server.addr.port}`;
  const close = () => server.shutdown();
  return { cert, origin, close, [Symbol.asyncDispose]: close };
}

/** The fetcher that reaches such peers: `allowPrivate` is the loopback allowance (false: the production policy). */
export const loopbackFetcher = (cert: string, allowPrivate = true) =>
  new SafeFetcher({ allowPrivate, resolver: () => Promise.resolve(["127.0.0.1"]), caCerts: [cert] });
