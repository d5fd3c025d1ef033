/**
 * The cloud console: a live web page of every shape in the cloud, with the controls of "a human or another
 * system" (delete, recolor, create a foreign shape, fault switches). This module only SERVES it; the page
 * itself is the browser code in static/ (plain ES modules, no build step), a client of the public API like
 * any other: it lists and watches `/v1` with the API token and switches `/admin/faults` with the admin token.
 *
 * It is a separate express app mounted on the cloud's (app.ts): the console is not part of the API, so
 * /openapi.json does not describe it, and its pages carry their own security headers.
 *
 * Routes (no token: they serve no data; the page asks for the token, see static/console.js):
 *   GET /                     the page (static/index.html)
 *   GET /console/config.json  what the cloud accepts: shape types and colors (from schemas.ts)
 *   GET /console/<asset>      the page's scripts, style sheet and icon (the ASSETS below, nothing else)
 *
 * Every answer carries a Content-Security-Policy that allows only this origin's scripts, styles and
 * fetches: no inline script, no inline style, no other origin. Together with a page that builds its DOM
 * with textContent (never innerHTML), a hostile name or tag is shown as text and can run nothing.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import express from "express";
import type { Express, RequestHandler } from "express";
import { onlyMethods } from "../routes/shapes.ts";
import { COLORS, SHAPE_TYPES } from "../schemas.ts";

/** The folder of the browser code. */
export const STATIC_DIR = join(import.meta.dirname, "static");

/** The Content-Security-Policy of every console answer. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** Every file the console serves under /console/, with its content type. The page is index.html at `/`. */
export const ASSETS: Readonly<Record<string, string>> = {
  "console.js": "text/javascript; charset=utf-8",
  "draw.js": "text/javascript; charset=utf-8",
  "api.js": "text/javascript; charset=utf-8",
  "live.js": "text/javascript; charset=utf-8",
  "sse.js": "text/javascript; charset=utf-8",
  "store.js": "text/javascript; charset=utf-8",
  "faults.js": "text/javascript; charset=utf-8",
  "console.css": "text/css; charset=utf-8",
  "favicon.svg": "image/svg+xml",
};

/** What the page learns from `/console/config.json`: what the cloud accepts. */
export interface ConsoleConfig {
  /** Every shape type, in the cloud's order. */
  readonly types: readonly string[];
  /** Every color of the palette. */
  readonly colors: readonly string[];
}

/** A file read into memory, with its content type. */
interface Asset {
  readonly type: string;
  readonly body: Buffer;
}

/**
 * Builds the console app. The files are read once, here: a missing file fails the cloud's start, not a
 * visitor's request (restart the cloud after editing them).
 */
export function consoleApp(): Express {
  const page: Asset = { type: "text/html; charset=utf-8", body: readAsset("index.html") };
  const assets = new Map<string, Asset>(
    Object.entries(ASSETS).map(([name, type]) => [name, { type, body: readAsset(name) }]),
  );
  const config: ConsoleConfig = { types: SHAPE_TYPES, colors: COLORS };

  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app
    .route("/")
    .all(securityHeaders)
    .get((_req, res) => {
      res.type(page.type).send(page.body);
    })
    .all(onlyMethods("GET"));
  app
    .route("/console/config.json")
    .all(securityHeaders)
    .get((_req, res) => {
      res.json(config);
    })
    .all(onlyMethods("GET"));
  app
    .route("/console/:file")
    .all(securityHeaders)
    .get((req, res, next) => {
      const asset = assets.get(req.params.file);
      if (!asset) {
        next("route"); // not a file of the console (e.g. a .ts file): the cloud's 404
        return;
      }
      res.type(asset.type).send(asset.body);
    })
    .all(onlyMethods("GET"));
  return app;
}

/** The headers of every answer of a console route (its 404s and 405s included). */
const securityHeaders: RequestHandler = (_req, res, next) => {
  res.set({
    "content-security-policy": CONSOLE_CSP,
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
  });
  next();
};

function readAsset(name: string): Buffer {
  try {
    return readFileSync(join(STATIC_DIR, name));
  } catch (error) {
    throw new Error(`cannot read the console's file ${name} in ${STATIC_DIR}: ${String(error)}`, {
      cause: error,
    });
  }
}
