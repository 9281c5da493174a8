/**
 * Preloaded into an exporter process a test starts (`node --import ./time-warp.mjs`): its wall clock runs
 * CDN_TEST_WARP_SPEED times as fast as the real one from CDN_TEST_WARP_BASE (ms) on, timers alike, so a process
 * test covers minutes of the exporter's time (late data revisited after `revisit`, token lifetimes) in seconds. The
 * test's simulator runs on the same warped clock (`warped` in ./everything-at-once.test.ts): both see one time.
 */
const base = Number(process.env.CDN_TEST_WARP_BASE);
const speed = Number(process.env.CDN_TEST_WARP_SPEED);
if (Number.isFinite(base) && Number.isFinite(speed) && speed > 0) {
  const RealDate = Date;
  const realNow = RealDate.now.bind(RealDate);
  const warpedNow = () => Math.floor(base + (realNow() - base) * speed);
  class WarpedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(warpedNow());
      else super(...args);
    }
    static now() {
      return warpedNow();
    }
  }
  globalThis.Date = WarpedDate;
  const realSetTimeout = globalThis.setTimeout;
  const realSetInterval = globalThis.setInterval;
  globalThis.setTimeout = (fn, ms, ...rest) =>
    realSetTimeout(fn, Math.max(0, Number(ms) || 0) / speed, ...rest);
  globalThis.setInterval = (fn, ms, ...rest) =>
    realSetInterval(fn, Math.max(1, Number(ms) || 0) / speed, ...rest);
}
