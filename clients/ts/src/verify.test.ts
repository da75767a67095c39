// Verifies the calls tests/e2e/test_signed_calls.py recorded (DUETIME_SIGNED_CALLS names the
// file; skipped when unset), printing "CASE <name>: verified" or "CASE <name>: refused: <why>".
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { callVerifier } from "./verify.js";

interface SignedCalls {
  secret: string;
  jwks_url: string;
  issuer: string;
  cases: {
    name: string;
    headers: Record<string, string>;
    body_base64: string;
    audience: string;
    later_seconds: number;
  }[];
}

const path = process.env["DUETIME_SIGNED_CALLS"];

test("signed calls", { skip: !path }, async () => {
  const calls = JSON.parse(readFileSync(path!, "utf8")) as SignedCalls;
  const verify = callVerifier(calls.secret, calls.jwks_url, calls.issuer);
  for (const c of calls.cases) {
    const headers = Object.fromEntries(
      Object.entries(c.headers).map(([name, value]) => [name.toLowerCase(), value]),
    );
    const later = new Date(Date.now() + c.later_seconds * 1000);
    try {
      await verify(headers, Buffer.from(c.body_base64, "base64"), c.audience, later);
      console.log(`CASE ${c.name}: verified`);
    } catch (error) {
      console.log(`CASE ${c.name}: refused: ${error}`);
    }
  }
});
