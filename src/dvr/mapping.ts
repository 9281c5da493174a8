/**
 * Maps one poll of an account's DVR streams onto the DVR families. No I/O; `nowSeconds` comes in.
 * A stream or host missing from the newest answer loses its series at once (they are all gauges).
 *
 * Caps (issue 15), as for recordings: a host new to a stream is admitted with all its series or refused whole,
 * new hosts in the order of their names, while `limits.max_series` leaves room; a host name longer than
 * `limits.max_label_length` is refused (it is the series' identity: truncated, two hosts could become one). The
 * round applies its streams in the configured order, so which hosts are refused does not depend on which answer
 * came first.
 */
import { overLength, type RefusalReason, type SeriesLimits } from '../store/limits.js';
import type { Family } from '../store/types.js';
import type { DvrFamilies } from './metrics.js';
import { rangeHealth } from './ranges.js';
import type { DvrHostEntry } from './response.js';

export interface StreamHealth {
  account: string;
  stream: string;
  host: string;
  alive: boolean;
  enabled: boolean;
  coverage?: number;
  largestGap: number;
  lastEnd?: number;
}

export class DvrMapping {
  /** account/stream -> hosts exposed, to remove hosts that vanished. */
  private readonly hosts = new Map<string, Set<string>>();
  /** account -> stream -> series refused by that stream's last apply. */
  private readonly refusals = new Map<string, Map<string, Partial<Record<RefusalReason, number>>>>();

  constructor(
    private readonly f: DvrFamilies,
    private readonly limits?: SeriesLimits,
  ) {}

  /** Series refused by the last apply of each of the account's streams, by reason (empty: none). */
  refused(account: string): Partial<Record<RefusalReason, number>> {
    const out: Partial<Record<RefusalReason, number>> = {};
    for (const r of this.refusals.get(account)?.values() ?? []) {
      for (const [reason, n] of Object.entries(r) as Array<[RefusalReason, number]>)
        out[reason] = (out[reason] ?? 0) + n;
    }
    return out;
  }

  /** The per-host families (every one but the per-stream cdn_dvr_stream_up). */
  private families(): Family[] {
    return (Object.entries(this.f) as Array<[keyof DvrFamilies, Family]>)
      .filter(([name]) => name !== 'streamUp')
      .map(([, family]) => family);
  }

  /** The outcome of one stream's poll: answered (1) or failed (0), whatever its hosts say. */
  streamPolled(account: string, stream: string, answered: boolean): void {
    this.f.streamUp.set(this.f.streamUp.slot([account, stream]), answered ? 1 : 0);
  }

  /** Applies the entries of one stream; returns a health summary per host (for the landing page). */
  applyStream(
    account: string,
    stream: string,
    entries: readonly DvrHostEntry[],
    nowSeconds: number,
  ): StreamHealth[] {
    const key = `${account}\u0000${stream}`;
    const before = this.hosts.get(key) ?? new Set<string>();
    const now = new Set<string>();
    const out: StreamHealth[] = [];
    // Hosts gone from the answer go first: their room is there for new ones in this very answer.
    const listed = new Set(entries.map((e) => e.host));
    for (const host of before) if (!listed.has(host)) this.removeHost(account, stream, host);
    const refused = this.admit(account, stream, entries, before);
    for (const e of entries) {
      if (refused.has(e.host)) continue;
      if (now.has(e.host)) continue; // one entry per host is documented; a duplicate would overwrite the first
      now.add(e.host);
      const labels = [account, stream, e.host];
      const h = rangeHealth(e.dvr.ranges, nowSeconds, e.dvr.window);
      const set = (family: Family, v: number | undefined) => {
        if (v === undefined || !Number.isFinite(v)) family.delete(labels);
        else family.set(family.slot(labels), v);
      };
      set(this.f.alive, e.alive ? 1 : 0);
      set(this.f.enabled, e.dvr.enabled ? 1 : 0);
      set(this.f.window, e.dvr.window);
      set(this.f.recorded, h.recorded);
      set(this.f.ranges, h.ranges);
      set(this.f.first, h.first);
      set(this.f.last, h.last);
      set(this.f.gap, h.gap);
      set(this.f.largestGap, h.largestGap);
      set(this.f.coverage, h.coverage);
      out.push({
        account,
        stream,
        host: e.host,
        alive: e.alive,
        enabled: e.dvr.enabled,
        coverage: h.coverage,
        largestGap: h.largestGap,
        lastEnd: h.last,
      });
    }
    this.hosts.set(key, now);
    return out;
  }

  /** The hosts of this answer refused by the caps (see the module comment); notes the refusals. */
  private admit(
    account: string,
    stream: string,
    entries: readonly DvrHostEntry[],
    before: ReadonlySet<string>,
  ): Set<string> {
    const refused = new Set<string>();
    const counts: Partial<Record<RefusalReason, number>> = {};
    const limits = this.limits;
    if (limits) {
      const perHost = this.families().length;
      const fresh = new Set<string>();
      for (const e of entries) {
        if (before.has(e.host) || fresh.has(e.host) || refused.has(e.host)) continue;
        if (overLength(e.host, limits.maxLabelLength)) {
          refused.add(e.host);
          counts.label_too_long = (counts.label_too_long ?? 0) + perHost;
        } else fresh.add(e.host);
      }
      const room = Math.max(0, Math.floor((limits.maxSeries - limits.storeSize()) / perHost));
      if (fresh.size > room) {
        for (const host of [...fresh].sort().slice(room)) {
          refused.add(host);
          counts.max_series = (counts.max_series ?? 0) + perHost;
        }
      }
    }
    let byStream = this.refusals.get(account);
    if (!byStream) {
      byStream = new Map();
      this.refusals.set(account, byStream);
    }
    if (Object.keys(counts).length) byStream.set(stream, counts);
    else byStream.delete(stream);
    return refused;
  }

  /**
   * The stream no longer exists: all its per-host series go. Its cdn_dvr_stream_up stays (at 0, as the caller
   * sets it): the stream is still configured, and that series is what says it fails.
   */
  removeStream(account: string, stream: string): void {
    const key = `${account}\u0000${stream}`;
    for (const host of this.hosts.get(key) ?? []) this.removeHost(account, stream, host);
    this.hosts.delete(key);
    this.refusals.get(account)?.delete(stream);
  }

  /** The account is no longer polled (discovery stopped it): every series of its streams goes, stream_up too. */
  removeAccount(account: string, streams: readonly string[]): void {
    for (const stream of streams) {
      this.removeStream(account, stream);
      this.f.streamUp.delete([account, stream]);
    }
    this.refusals.delete(account);
  }

  private removeHost(account: string, stream: string, host: string): void {
    for (const family of this.families()) family.delete([account, stream, host]);
  }
}
