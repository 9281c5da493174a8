/**
 * The command line: parse flags, then run, simulate, demo, check-config or backfill. It gets the environment and the
 * arguments from src/cli.ts (after the Node version check), the one module that reads process.env and process.argv.
 */
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { backfillCommand } from './backfill/command.js';
import { backfillUsage } from './backfill/usage.js';
import type { Config } from './config/index.js';
import {
  type CommandLine,
  ConfigError,
  checkConfigReport,
  loadConfig,
  parseCommandLine,
  UsageError,
  usage,
} from './config/index.js';
import { demoBanner, demoConfig, demoUsage, startDemoSimulator } from './demo.js';
import { Exporter } from './exporter/exporter.js';
import { createLogger, type Logger } from './log.js';
import { boundAddress, handleSignals, serve } from './main.js';
import { simulatorUsage } from './simulator/options.js';
import { parseSimulatorArgs, startSimulator } from './simulator/server.js';
import {
  AuthCache,
  verdictFileBeside,
  WebConfigError,
  WebConfigSource,
  webConfigReport,
} from './web/index.js';

/**
 * Shutdown is bounded at about 4.5 s, under the 5 s a supervisor may be told to wait (and far under Kubernetes'
 * default 30 s): requests in flight get this long to finish (and the windows they answer this long to be counted),
 * then Exporter.stop gives closing the connections, the parse worker and a state file save in progress up to 1 s
 * together, and closeServer gives scrapes in progress up to 1 s. No step waits unbounded (a long applier queue at
 * stop once held SIGTERM for 16.7 s: it is no longer drained past the grace, its windows are asked for again).
 */
const SHUTDOWN_GRACE_MS = 2500;

export function packageVersion(): string {
  // The nearest package.json above this module: the repository's from src/ (tests) and from dist/src/ (the build).
  for (const up of ['../package.json', '../../package.json']) {
    const path = fileURLToPath(new URL(up, import.meta.url));
    if (!existsSync(path)) continue;
    const pkg = JSON.parse(readFileSync(path, 'utf8')) as { name?: string; version?: string };
    if (pkg.name === 'cdn-exporter' && pkg.version !== undefined) return pkg.version;
  }
  throw new Error('package.json of cdn-exporter not found beside src/ or dist/src/');
}

/** The web config named by --web.config.file, loaded and checked; `refused` (the reason printed) when unusable. */
function webSource(cl: CommandLine, log: Logger): WebConfigSource | undefined | 'refused' {
  if (cl.webConfigFile === undefined) return undefined;
  try {
    return new WebConfigSource(cl.webConfigFile, log);
  } catch (err) {
    if (!(err instanceof WebConfigError)) throw err;
    process.stderr.write(`cdn-exporter: ${err.message}\n`);
    return 'refused';
  }
}

async function runExporter(
  cl: CommandLine,
  config: Config,
  log: Logger,
  web: WebConfigSource | undefined,
  extraStop?: () => Promise<void>,
) {
  const exporter = new Exporter({ config, log, version: packageVersion() });
  const served = await serve({
    app: exporter.app,
    listen: cl.listen,
    limits: config.server,
    ...(web ? { source: web } : {}),
    // Basic-auth credentials accepted before are known good after a restart (docs/configuration.md, basic auth).
    ...(web && config.stateFile !== undefined
      ? {
          authCache: new AuthCache({
            file: verdictFileBeside(config.stateFile),
            onFileError: (err) =>
              log.warn(
                { err: err.message },
                'basic auth verdict file unusable; verdicts kept in memory only',
              ),
          }),
        }
      : {}),
    openPaths: new Set(cl.healthzOpen ? ['/healthz'] : []),
    log,
  });
  const server = served.server;
  const address = boundAddress(server);
  const state = web?.current();
  log.info(
    {
      address,
      version: packageVersion(),
      tls: Boolean(state?.tls),
      http2: Boolean(state?.tls && state.config.http2),
      basicAuth: (state?.config.users.size ?? 0) > 0,
    },
    `serving /metrics on ${served.scheme}://${address}/metrics`,
  );
  // Signals are handled from here on, a start still under way included (restoring a big state file takes a
  // while): the stop waits for it, so SIGTERM during a start is a clean stop, not the default kill.
  const started = exporter.start();
  handleSignals(
    {
      stop: async () => {
        await started.catch(() => undefined);
        await exporter.stop(SHUTDOWN_GRACE_MS);
        await served.close(1000);
        await extraStop?.();
      },
    },
    log,
  );
  await started;
  return { exporter, server, address, scheme: served.scheme };
}

async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  let cl: CommandLine;
  try {
    cl = parseCommandLine(argv);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`cdn-exporter: ${err.message}\n\n${usage()}`);
      return 2;
    }
    throw err;
  }
  if (cl.help) {
    process.stdout.write(
      cl.command === 'demo' ? demoUsage() : cl.command === 'backfill' ? backfillUsage() : usage(),
    );
    return 0;
  }
  if (cl.version) {
    process.stdout.write(`cdn-exporter ${packageVersion()}\n`);
    return 0;
  }
  const log = createLogger({ level: cl.logLevel, format: cl.logFormat });

  switch (cl.command) {
    case 'backfill': {
      // The first SIGINT or SIGTERM stops reading and saves the progress; a second exits at once.
      const interrupted = new AbortController();
      const onSignal = (signal: NodeJS.Signals) => {
        if (interrupted.signal.aborted) process.exit(1);
        log.info({ signal }, 'interrupted: saving the progress');
        interrupted.abort(signal);
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      return backfillCommand({
        cl,
        env,
        hostname: hostname(),
        version: packageVersion(),
        stdout: process.stdout,
        stderr: process.stderr,
        signal: interrupted.signal,
      });
    }
    case 'check-config':
    case 'run': {
      let config: Config;
      try {
        // The host name is remote_write.instance's default: read here, at the entry point (modules read no `os`).
        config = loadConfig({ file: cl.configFile, env, hostname: hostname() });
      } catch (err) {
        if (err instanceof ConfigError) {
          process.stderr.write(`cdn-exporter: ${err.message}\n`);
          return 2;
        }
        throw err;
      }
      const web = webSource(cl, log);
      if (web === 'refused') return 2;
      if (cl.command === 'check-config') {
        process.stdout.write(checkConfigReport(config));
        if (web) process.stdout.write(webConfigReport(web));
        return 0;
      }
      await runExporter(cl, config, log, web);
      return -1;
    }
    case 'simulate': {
      let args: ReturnType<typeof parseSimulatorArgs>;
      try {
        args = parseSimulatorArgs(cl.rest);
      } catch (err) {
        process.stderr.write(`cdn-exporter simulate: ${(err as Error).message}\n\n${simulatorUsage()}`);
        return 2;
      }
      if (args.help) {
        process.stdout.write(simulatorUsage());
        return 0;
      }
      const sim = await startSimulator(args.options, args.listen);
      const accounts = sim.accounts.map((a) => ({ account: a.name, token: a.token }));
      // The demo user's password is the simulator's own, published in its README; it is not a real secret.
      log.info(
        { url: sim.url, seed: args.options.seed, accounts, login: sim.users.map((u) => u.username) },
        `simulator on ${sim.url}; try: curl -H 'CDN-AUTH-TOKEN: ${accounts[0]?.token}' '${sim.url}/app/metrics/v1/resources?account=${accounts[0]?.account}&start=2026-01-01T00:00:00&end=2026-01-01T00:05:00'`,
      );
      handleSignals({ stop: () => sim.close() }, log);
      return -1;
    }
    case 'demo': {
      const web = webSource(cl, log);
      if (web === 'refused') return 2;
      const sim = await startDemoSimulator();
      const { address, scheme } = await runExporter(cl, demoConfig(sim.url), log, web, () => sim.close());
      process.stderr.write(demoBanner(address, sim.url, scheme));
      return -1;
    }
  }
}

/** Runs the command line; exits when the command is done (a server keeps the process alive until a signal). */
export function runCommandLine(argv: string[], env: NodeJS.ProcessEnv): void {
  main(argv, env).then(
    (code) => {
      if (code >= 0) process.exit(code);
    },
    (err: unknown) => {
      process.stderr.write(`cdn-exporter: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
