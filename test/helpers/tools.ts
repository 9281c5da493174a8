/**
 * External tools (Debian's prometheus, promtool, chromium). Locally a test that needs one skips with a message
 * when it is missing; with REQUIRE_TOOLS=1 (set by .ci/run) a missing tool is a failure, never a skip.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const ENV_NAMES = {
  prometheus: 'PROMETHEUS_BIN',
  promtool: 'PROMTOOL_BIN',
  chromium: 'CHROMIUM_BIN',
} as const;
export type Tool = keyof typeof ENV_NAMES;

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
  console.warn(`skipping: ${tool} not found (apt-get install ${tool === 'promtool' ? 'prometheus' : tool})`);
  return undefined;
}
