/**
 * External tools (Debian's prometheus, promtool, chromium; Helm 4 and Helm 3 from .ci/fetch-helm.sh). Locally a
 * test that needs one skips with a message when it is missing; with REQUIRE_TOOLS=1 (set by .ci/run) a missing tool
 * is a failure, never a skip.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { noteSkip } from './skip-log.js';

const ENV_NAMES = {
  prometheus: 'PROMETHEUS_BIN',
  promtool: 'PROMTOOL_BIN',
  chromium: 'CHROMIUM_BIN',
  helm: 'HELM_BIN',
  helm3: 'HELM3_BIN',
} as const;
export type Tool = keyof typeof ENV_NAMES;

/** How to get each tool, for the skip message. */
const HOW: Record<Tool, string> = {
  prometheus: 'apt-get install prometheus',
  promtool: 'apt-get install prometheus',
  chromium: 'apt-get install chromium',
  helm: 'Helm 4: .ci/fetch-helm.sh DIR, then HELM_BIN=DIR/helm',
  helm3: 'Helm 3: .ci/fetch-helm.sh DIR v31, then HELM3_BIN=DIR/helm',
};

function which(cmd: string): string | undefined {
  try {
    const out = execFileSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).trim();
    return out || undefined;
  } catch {
    return undefined;
  }
}

/** The tool's path, or undefined when it is missing (and REQUIRE_TOOLS is not set). Throws when required. */
export function findTool(tool: Tool): string | undefined {
  const fromEnv = process.env[ENV_NAMES[tool]];
  const path = fromEnv && existsSync(fromEnv) ? fromEnv : which(tool);
  if (path) return path;
  if (process.env.REQUIRE_TOOLS === '1') {
    throw new Error(
      `${tool} is required (REQUIRE_TOOLS=1) but was not found; set ${ENV_NAMES[tool]} or install it`,
    );
  }
  noteSkip(`${tool} not found (${HOW[tool]})`);
  return undefined;
}

/**
 * A Node.js older than `floor` (`OLDER_NODE_BIN`, else a `node` on PATH or in /usr/bin, /usr/local/bin), with its
 * version; for the checks that the project's commands still start with the machine's own Node. Debian's node (20)
 * is one on the CI machine. Missing: undefined with a message, or a failure under REQUIRE_TOOLS=1.
 */
export function findOlderNode(
  olderThan: (version: string) => boolean,
): { path: string; version: string } | undefined {
  const dirs = (process.env.PATH ?? '').split(':').filter(Boolean);
  const candidates = [
    process.env.OLDER_NODE_BIN,
    ...dirs.map((d) => `${d}/node`),
    '/usr/bin/node',
    '/usr/local/bin/node',
  ].filter((p): p is string => p !== undefined && p !== '' && existsSync(p));
  for (const path of new Set(candidates)) {
    try {
      const version = execFileSync(path, ['--version'], { encoding: 'utf8', timeout: 10_000 }).trim();
      if (olderThan(version)) return { path, version };
    } catch {
      // not a working node
    }
  }
  if (process.env.REQUIRE_TOOLS === '1') {
    throw new Error(
      'a Node.js older than the floor is required (REQUIRE_TOOLS=1) but none was found; set OLDER_NODE_BIN',
    );
  }
  noteSkip('no Node.js older than the floor found (set OLDER_NODE_BIN to one, e.g. /usr/bin/node)');
  return undefined;
}

/** Where `.ci/fetch-prometheus-trixie.sh` is told to unpack Prometheus 2.53 when PROMETHEUS_TRIXIE_BIN is unset. */
export const PROMETHEUS_TRIXIE_CACHE = 'node_modules/.cache/prometheus-trixie';

/**
 * Prometheus 2.53 (Debian trixie's package), which reads created timestamps from the protobuf format
 * (`--enable-feature=created-timestamp-zero-ingestion`; Debian's bookworm package, 2.42, has no such feature):
 * `PROMETHEUS_TRIXIE_BIN`, else the copy `.ci/fetch-prometheus-trixie.sh` unpacked into PROMETHEUS_TRIXIE_CACHE.
 * Missing: undefined with a message, or a failure under REQUIRE_TOOLS=1.
 */
export function findPrometheusTrixie(): string | undefined {
  const fromEnv = process.env.PROMETHEUS_TRIXIE_BIN;
  const cached = `${PROMETHEUS_TRIXIE_CACHE}/usr/bin/prometheus`;
  const path = fromEnv && existsSync(fromEnv) ? fromEnv : existsSync(cached) ? cached : undefined;
  if (path) return path;
  const how = `run .ci/fetch-prometheus-trixie.sh ${PROMETHEUS_TRIXIE_CACHE} or set PROMETHEUS_TRIXIE_BIN`;
  if (process.env.REQUIRE_TOOLS === '1') {
    throw new Error(`Prometheus 2.53 is required (REQUIRE_TOOLS=1) but was not found: ${how}`);
  }
  noteSkip(`Prometheus 2.53 (created timestamps) not found: ${how}`);
  return undefined;
}

/**
 * Headless Chromium's flags for a page on loopback, with `profile` as a new empty user-data dir. The background
 * networking flags matter: without them this machine's closed network refuses Chromium's own connections.
 */
export function chromiumArgs(profile: string): string[] {
  return [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--hide-scrollbars',
    `--user-data-dir=${profile}`,
  ];
}

/** Runs Chromium with `args` to its end (30 s at the most) and gives what it printed (`--dump-dom`: the DOM). */
export function runChromium(bin: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      bin,
      args,
      { timeout: 30_000, maxBuffer: 10 * 1024 * 1024, killSignal: 'SIGKILL' },
      (err, stdout) => (err ? reject(err) : resolve(stdout)),
    );
  });
}
