/**
 * Maps one poll of an account's DVR streams onto the DVR families. No I/O; `nowSeconds` comes in.
 * A stream or host missing from the newest answer loses its series at once (they are all gauges).
 */
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

export class DvrProcess {
  /** account/stream -> hosts exposed, to remove hosts that vanished. */
  private readonly hosts = new Map<string, Set<string>>();

  constructor(private readonly f: DvrFamilies) {}

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
    for (const e of entries) {
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
    for (const host of before) if (!now.has(host)) this.removeHost(account, stream, host);
    this.hosts.set(key, now);
    return out;
  }

  /**
   * The stream no longer exists: all its per-host series go. Its cdn_dvr_stream_up stays (at 0, as the caller
   * sets it): the stream is still configured, and that series is what says it fails.
   */
  removeStream(account: string, stream: string): void {
    const key = `${account}\u0000${stream}`;
    for (const host of this.hosts.get(key) ?? []) this.removeHost(account, stream, host);
    this.hosts.delete(key);
  }

  /** The account is no longer polled (discovery stopped it): every series of its streams goes, stream_up too. */
  removeAccount(account: string, streams: readonly string[]): void {
    for (const stream of streams) {
      this.removeStream(account, stream);
      this.f.streamUp.delete([account, stream]);
    }
  }

  private removeHost(account: string, stream: string, host: string): void {
    for (const family of this.families()) family.delete([account, stream, host]);
  }
}
