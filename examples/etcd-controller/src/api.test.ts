import { describe, expect, it } from "vitest";
import { entryNameOf, entryOfName, keyOfName, nameOfKey } from "./api.ts";

describe("a ConfigEntry's external name and etcd key", () => {
  it.each([
    { reason: "a plain name", namespace: "team-a", name: "db-url", key: "/config/team-a/db-url" },
    {
      reason: "a name with dots: the last dot splits off the namespace",
      namespace: "ns",
      name: "a.b",
      key: "/config/ns/a.b",
    },
  ])("maps both ways: $reason", ({ namespace, name, key }) => {
    const external = entryNameOf(namespace, name);
    expect(entryOfName(external)).toEqual({ namespace, name });
    expect(keyOfName(external)).toBe(key);
    expect(nameOfKey(key)).toBe(external);
  });

  it.each([
    { reason: "outside the prefix", key: "/other/ns/name" },
    { reason: "too deep", key: "/config/ns/a/b" },
    { reason: "no name", key: "/config/ns/" },
    { reason: "a namespace with a dot (no namespace has one)", key: "/config/a.b/name" },
  ])("names any other key by itself, which no ConfigEntry maps to: $reason", ({ key }) => {
    expect(nameOfKey(key)).toBe(key);
    expect(keyOfName(nameOfKey(key))).not.toBe(key);
  });
});
