/** A client asking an exporter's /healthz over and over while a test loads it: whether it kept answering. */

export interface HealthProbe {
  /** Answers 200 so far. */
  readonly probes: number;
  /** Other answers and failed requests so far. */
  readonly failed: number;
  /** Stops probing; resolves once the request in flight has ended. */
  stop(): Promise<void>;
}

/**
 * Asks `${base}/healthz` through `status` (the test's own client: its status code) every 20 ms, at most
 * `maxProbes` times, until stopped.
 */
export function probeHealth(
  base: string,
  status: (url: string) => Promise<number>,
  maxProbes: number,
): HealthProbe {
  let probes = 0;
  let failed = 0;
  let probing = true;
  const done = (async () => {
    for (let i = 0; i < maxProbes && probing; i++) {
      try {
        if ((await status(`${base}/healthz`)) === 200) probes++;
        else failed++;
      } catch {
        failed++;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    get probes() {
      return probes;
    },
    get failed() {
      return failed;
    },
    stop: async () => {
      probing = false;
      await done;
    },
  };
}
