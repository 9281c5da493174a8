/**
 * `remote_write` (issue 32) in the configuration file: settled windows pushed to a Prometheus remote-write 1.0
 * receiver (src/remote-write). Strict like the rest of ./schema.ts, which builds it with its own duration and text
 * rules (`makeRemoteWriteSchema`) and takes its defaults and ceilings from here. `instance` left out or empty is the
 * host name, which the entry point passes to loadConfig (./typed-config.ts fills it in).
 */
import { z } from 'zod';
import type { duration } from './schema.js';

export const REMOTE_WRITE_DEFAULTS = {
  job: 'cdn-exporter-settled',
  timeout: '30s',
  queue: { max_pending_samples: 2_000_000, max_samples_per_send: 5000 },
} as const;

export const REMOTE_WRITE_CEILINGS = {
  // remote_write.queue.*: pending samples are held in memory, as series are (maxSeries' reasoning); one request of
  // 1M samples at ~100 bytes of labels each is about 100 MB, Mimir's default limit on a request
  // (-distributor.max-recv-msg-size, 100 MiB).
  maxPendingSamples: 50_000_000,
  maxSamplesPerSend: 1_000_000,
} as const;

/** What ./schema.ts lends: its duration parser and its text rules. */
export interface SchemaParts {
  duration: typeof duration;
  nonEmpty: z.ZodString;
  password: z.ZodString;
  /** api.timeout's ceiling, remote_write.timeout's too. */
  timeoutCeilingMs: number;
}

/** A Prometheus label name (data model): letters, digits and `_`, not starting with a digit. */
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Labels every written series has from the exporter itself: `external_labels` may not set them. */
const OWN_LABELS = new Set(['__name__', 'job', 'instance']);
/** Labels the traffic families carry (docs/metrics.md): an external label of that name would replace them. */
const FAMILY_LABELS = new Set(['account', 'resource', 'code', 'class', 'size_range']);

/**
 * Headers the remote-write client sets itself (remote write 1.0, credentials, HTTP framing): Prometheus refuses the
 * same ones in its `headers`.
 */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'host',
  'content-encoding',
  'content-length',
  'content-type',
  'user-agent',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'upgrade',
  'proxy-authorization',
  'x-prometheus-remote-write-version',
]);

/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const remoteWriteUrl = z.string().transform((text, ctx) => {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  // The value is not echoed: a URL may carry credentials.
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    ctx.addIssue({ code: 'custom', message: 'must be an http:// or https:// URL' });
    return z.NEVER;
  }
  if (url.username !== '' || url.password !== '') {
    ctx.addIssue({ code: 'custom', message: 'must not carry a user or password: use basic_auth' });
    return z.NEVER;
  }
  return text;
});

const externalLabels = z.record(z.string(), z.string()).superRefine((labels, ctx) => {
  for (const [name, value] of Object.entries(labels)) {
    if (!LABEL_NAME.test(name))
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: 'must be a Prometheus label name (letters, digits and _, not starting with a digit)',
      });
    else if (OWN_LABELS.has(name))
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: `is set by the exporter${name === '__name__' ? '' : ` (remote_write.${name})`}`,
      });
    else if (FAMILY_LABELS.has(name))
      ctx.addIssue({ code: 'custom', path: [name], message: 'is a label of the traffic series themselves' });
    else if (name.startsWith('__'))
      ctx.addIssue({ code: 'custom', path: [name], message: 'names starting with __ are reserved' });
    else if (value === '')
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: 'must not be empty (an empty value is no label)',
      });
  }
});

const remoteWriteHeaders = z.record(z.string(), z.string()).superRefine((headers, ctx) => {
  for (const name of Object.keys(headers)) {
    if (!HEADER_NAME.test(name))
      ctx.addIssue({ code: 'custom', path: [name], message: 'must be an HTTP header name' });
    else if (RESERVED_HEADERS.has(name.toLowerCase()))
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message:
          name.toLowerCase() === 'authorization'
            ? 'is set by the client: use bearer_token_file or basic_auth'
            : 'is set by the remote-write client',
      });
  }
});

/**
 * `remote_write` (issue 32): settled windows pushed to a Prometheus remote-write 1.0 receiver (src/remote-write).
 * `instance` left out or empty is the host name, which the entry point passes to loadConfig.
 */
export function makeRemoteWriteSchema(parts: SchemaParts) {
  const { duration, nonEmpty, password } = parts;
  return z
    .strictObject({
      url: remoteWriteUrl,
      job: nonEmpty.default(REMOTE_WRITE_DEFAULTS.job),
      instance: z.string().optional(),
      external_labels: externalLabels.default({}),
      headers: remoteWriteHeaders.default({}),
      bearer_token_file: nonEmpty.optional(),
      basic_auth: z
        .strictObject({
          username: nonEmpty,
          password: password.optional(),
          password_file: nonEmpty.optional(),
        })
        .optional(),
      tls: z
        .strictObject({
          ca_file: nonEmpty.optional(),
          cert_file: nonEmpty.optional(),
          key_file: nonEmpty.optional(),
          server_name: nonEmpty.optional(),
          insecure_skip_verify: z.boolean().default(false),
        })
        .prefault({}),
      timeout: duration({ min: 1, max: parts.timeoutCeilingMs }).prefault(REMOTE_WRITE_DEFAULTS.timeout),
      queue: z
        .strictObject({
          max_pending_samples: z
            .int()
            .min(1)
            .max(REMOTE_WRITE_CEILINGS.maxPendingSamples)
            .default(REMOTE_WRITE_DEFAULTS.queue.max_pending_samples),
          max_samples_per_send: z
            .int()
            .min(1)
            .max(REMOTE_WRITE_CEILINGS.maxSamplesPerSend)
            .default(REMOTE_WRITE_DEFAULTS.queue.max_samples_per_send),
        })
        .prefault({}),
    })
    .superRefine((rw, ctx) => {
      if (rw.bearer_token_file !== undefined && rw.basic_auth !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['basic_auth'],
          message: 'bearer_token_file and basic_auth exclude each other: choose one',
        });
      const basic = rw.basic_auth;
      if (basic && (basic.password === undefined) === (basic.password_file === undefined))
        ctx.addIssue({
          code: 'custom',
          path: ['basic_auth'],
          message: 'needs exactly one of password and password_file',
        });
      if ((rw.tls.cert_file === undefined) !== (rw.tls.key_file === undefined))
        ctx.addIssue({
          code: 'custom',
          path: ['tls', rw.tls.cert_file === undefined ? 'cert_file' : 'key_file'],
          message: 'cert_file and key_file go together (a client certificate and its key)',
        });
      const { max_pending_samples: pending, max_samples_per_send: perSend } = rw.queue;
      // Only between two values each within its own bounds (zod runs this after a field's own issue too).
      if (pending >= 1 && pending <= REMOTE_WRITE_CEILINGS.maxPendingSamples && perSend > pending)
        ctx.addIssue({
          code: 'custom',
          path: ['queue', 'max_samples_per_send'],
          message: `must not be more than queue.max_pending_samples (${pending})`,
        });
    });
}
