import assert from "node:assert/strict";
import { smtpTransportOptions } from "../../core/identity/mailer.ts";
import { startLocalSmtp } from "./_smtp.ts";

Deno.test("smtpTransportOptions(): smtp:// to another host must upgrade with STARTTLS; this machine and smtps:// need not", () => {
  const remote = smtpTransportOptions("smtp://relay:s3cret@mail.example.com:587");
  assert.equal(remote.requireTLS, true, "no plain-text AUTH or claim code when the STARTTLS offer is stripped");
  assert.equal(remote.secure, false);
  assert.deepEqual(remote.auth, { user: "relay", pass: "s3cret" });
  for (const local of ["smtp://127.0.0.1:2525", "smtp://localhost:25", "smtp://LOCALHOST:25", "smtp://[::1]:25"]) {
    assert.equal(smtpTransportOptions(local).requireTLS, false, local);
  }
  // Names that only look local are treated as remote.
  assert.equal(smtpTransportOptions("smtp://0x7f.1:25").requireTLS, true);
  assert.equal(smtpTransportOptions("smtp://localhost.example.com:25").requireTLS, true);
  const implicit = smtpTransportOptions("smtps://mail.example.com");
  assert.deepEqual([implicit.secure, implicit.requireTLS, implicit.port], [true, false, 465]);
});

Deno.test("a relay reached with a remote smtp:// URL's options that offers no STARTTLS receives nothing", async () => {
  // The real server on 127.0.0.1 stands for a remote relay whose STARTTLS offer was stripped on the way.
  await using smtp = await startLocalSmtp();
  const { default: nodemailer } = await import("nodemailer");
  const port = Number(new URL(smtp.url).port);
  const transport = nodemailer.createTransport({
    ...smtpTransportOptions("smtp://mail.example.com:587"),
    host: "127.0.0.1",
    port,
    pool: false,
  });
  try {
    await assert.rejects(
      transport.sendMail({ from: "a@example.com", to: "b@example.com", subject: "Code", text: "ABCD-EFGH" }),
    );
    assert.equal(smtp.messages.length, 0);
  } finally {
    transport.close();
  }
});
