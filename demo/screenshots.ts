/**
 * `npm run screenshots`: the docs' pictures of the two-worlds page, taken from the real demo. It starts
 * `npm start` in a fresh state folder (its own control plane, cloud and controller, on free ports), opens
 * the page in headless Chromium, and runs the whole tour against it (demo/tour.ts, `runTour`). At each
 * moment a step shows, the page highlights it and picks its first row; the script waits until the page
 * shows that moment and has settled, and takes a picture. The step's key moment (the one its `ctx.show`
 * marks `key`; else its last) is kept: docs/screenshots/<NN>-<step title>.png, one per scenario, shown by
 * the scenario pages and the README.
 *
 * Exit codes: 0 every picture taken; 1 something failed (the demo, the browser, a tour step); 2 bad
 * command line.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { setTimeout } from "node:timers/promises";
import { join, relative } from "node:path";
import { parseArgs } from "node:util";
import type { Page } from "playwright-core";
import { isInvokedDirectly } from "@shapes/envtest";
import { launchChromium, requireChromium, waitFor, watchMisbehaviour } from "@shapes/stack";
import { DemoProcess } from "./demo-process.ts";
import type { TourMoment } from "./control.ts";
import { REPO_ROOT } from "./paths.ts";
import { runTour } from "./tour.ts";
import { STEPS } from "./tour-steps.ts";

/** Where the pictures go by default. */
export const SCREENSHOT_DIR = join(REPO_ROOT, "docs", "screenshots");
/** The browser window: wide enough for both worlds side by side, like a laptop screen. */
const VIEWPORT = { width: 1280, height: 900 };

const USAGE = `Usage: npm run screenshots -- [options]

Takes the docs' pictures of the demo's two-worlds page, from the real demo: starts npm start in a fresh
state folder (its own control plane, cloud and controller, on free ports; your own demo is not touched),
opens the page in headless Chromium (Debian's: scripts/ci-apt.sh, or CHROMIUM_PATH), runs the whole tour
against it, and keeps a picture of each step's key moment: <out>/<NN>-<step>.png. A few minutes.

Options:
  --out <dir>   Where the pictures go (default docs/screenshots).
  -h, --help    Show this help.
`;

/** The file name of step `index`'s picture (0-based): `06-a-missed-deletion-is-caught-by-the-shaperef.png`. */
export function screenshotName(index: number, title: string): string {
  const slug = title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "");
  return `${String(index + 1).padStart(2, "0")}-${slug}.png`;
}

/** Runs `npm run screenshots` with `argv`; resolves with the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  let out: string;
  try {
    const { values } = parseArgs({
      args: [...argv],
      options: { out: { type: "string" }, help: { type: "boolean", short: "h" } },
      strict: true,
      allowPositionals: false,
    });
    if (values.help) {
      process.stdout.write(USAGE);
      return 0;
    }
    out = values.out ?? SCREENSHOT_DIR;
  } catch (error) {
    process.stderr.write(`npm run screenshots: cannot use the command line: ${(error as Error).message}\n`);
    return 2;
  }

  const say = (text: string) => process.stdout.write(`screenshots: ${text}\n`);
  let demo: DemoProcess | undefined;
  let browser: Awaited<ReturnType<typeof launchChromium>> | undefined;
  try {
    requireChromium("take the screenshots"); // before the demo starts: a missing browser fails at once
    say("starting the demo in a fresh state folder (the first run builds Kubernetes: minutes)...");
    demo = await DemoProcess.start("screenshots", {
      onProgress: (line) => line.trim() && say(`  demo: ${line}`),
    });
    browser = await launchChromium("take the screenshots");
    const page = await browser.newPage({ viewport: VIEWPORT });
    const seen = watchMisbehaviour(page);
    await page.goto(demo.viewLink);
    await waitFor("the page to be live", async () => {
      if ((await page.textContent("#connection")) !== "live") throw new Error("not live yet");
    });

    /** Per step: the picture of its key moment (or, until one is marked, of its latest). */
    const kept = new Map<number, { key: boolean; picture: Buffer }>();
    let narration = "";
    say(`running the tour (${STEPS.length} steps) with the page open...`);
    const code = await runTour(
      { stateDir: demo.paths.root, step: undefined, yes: true, timeoutMs: 90_000, keep: false },
      {
        onMoment: async (moment, control) => {
          await control.showTourMoment(moment);
          await showMoment(page, moment, (await control.status()).controller.state);
          const picture = await page.screenshot();
          if (!kept.get(moment.step)?.key) kept.set(moment.step, { key: moment.key === true, picture });
          say(`  step ${moment.step}: ${moment.caption}`);
        },
      },
      { write: (text) => void (narration += text), interactive: false },
    );
    if (code !== 0) {
      const tail = narration.split("\n").slice(-30).join("\n");
      throw new Error(`cannot finish the tour (exit code ${code}); it said, last:\n${tail}`);
    }
    if (seen.problems.length > 0) throw new Error(`the page misbehaved: ${seen.problems.join("; ")}`);

    await mkdir(out, { recursive: true });
    for (const [index, step] of STEPS.entries()) {
      const picture = kept.get(index + 1)?.picture;
      if (!picture)
        throw new Error(`cannot find a picture of step ${index + 1} (${step.title}): it showed no moment`);
      const file = join(out, screenshotName(index, step.title));
      await writeFile(file, picture);
      say(`wrote ${relative(process.cwd(), file)}`);
    }
    return 0;
  } catch (error) {
    process.stderr.write(`npm run screenshots: ${(error as Error).message}\n`);
    return 1;
  } finally {
    await browser?.close();
    await demo?.stop();
  }
}

/**
 * Waits until the page shows `moment` (its caption in the tour banner), picks the first row it highlights,
 * and waits for the page to agree with the demo about the controller, for the picked row's story, and for
 * the page to settle.
 */
async function showMoment(page: Page, moment: TourMoment, controllerState: string): Promise<void> {
  await waitFor(`the page to show “${moment.caption}”`, async () => {
    if ((await page.textContent("#tour-caption")) !== moment.caption) throw new Error("not yet");
  });
  await waitFor(`the page to say the controller is ${controllerState}`, async () => {
    if ((await page.getAttribute("#controller-state", "data-state")) !== controllerState)
      throw new Error("not yet");
  });
  const first = page.locator("#rows .row.tour").first();
  if ((await first.count()) > 0) {
    await first.click();
    await waitFor("the picked row's story", async () => {
      if (!(await page.textContent("#story-note"))) throw new Error("not read yet");
    });
  }
  await page.evaluate("window.scrollTo(0, 0)"); // the click may have scrolled the window to the row
  // Settled: no batch of changes for half a second. A page that never quiets down (it should, the
  // controller writes nothing in steady state) is taken after 10 s anyway: a picture, not a verdict.
  let batches = -1;
  let quietSince = Date.now();
  const giveUpAt = Date.now() + 10_000;
  while (Date.now() - quietSince < 500 && Date.now() < giveUpAt) {
    const now = await page.evaluate<number>("performance.getEntriesByName('view:changes').length");
    if (now !== batches) {
      batches = now;
      quietSince = Date.now();
    }
    await setTimeout(100);
  }
}

if (isInvokedDirectly(import.meta.filename)) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(
        `npm run screenshots: ${error instanceof Error ? error.message : String(error)}\n`,
      );
      process.exit(1);
    },
  );
}
