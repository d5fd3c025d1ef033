import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { LOOPBACK, freePorts, isAddressInUse, isPortFree } from "./ports.ts";

describe("freePorts", () => {
  it("returns distinct ports that can be bound right away", async () => {
    const ports = await freePorts(3);
    expect(new Set(ports).size).toBe(3);
    for (const port of ports) expect(await isPortFree(port)).toBe(true);
  });

  it("isPortFree says false while something listens", async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, LOOPBACK, resolve));
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    try {
      expect(await isPortFree(address.port)).toBe(false);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    expect(await isPortFree(address.port)).toBe(true);
  });
});

describe("isAddressInUse", () => {
  const cases = [
    {
      reason: "kube-apiserver's message",
      log: 'E1122 failed to listen on 127.0.0.1:6443: listen tcp 127.0.0.1:6443: bind: address already in use"',
      want: true,
    },
    {
      reason: "etcd's zap JSON line",
      log: '{"level":"fatal","msg":"listen tcp 127.0.0.1:2379: bind: address already in use"}',
      want: true,
    },
    { reason: "another failure", log: "open /x/pki/ca.crt: no such file or directory", want: false },
  ];
  it.each(cases)("$reason", ({ log, want }) => {
    expect(isAddressInUse(log)).toBe(want);
  });
});
