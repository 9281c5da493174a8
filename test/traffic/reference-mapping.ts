/**
 * TEST ORACLE: the straightforward TrafficMapping as it was before the series caches (src/traffic/mapping.ts),
 * kept only so side-series.test.ts can check that the cached one exposes exactly the same series.
 *
 * Maps traffic answers onto the traffic families: counters once per window, gauges from the newest window.
 * No I/O: time comes in as an argument.
 *
 * Stale series (docs/architecture.md): a resource missing from an answer loses its gauges at once; its counters
 * stay until it has been missing for `counterRetentionMs` (a day), so rate() sees no false reset when it returns.
 */

import type { Side } from '../../src/api/vocabulary.js';
import type { Family } from '../../src/store/types.js';
import type { SideFamilies, TrafficFamilies } from '../../src/traffic/metrics.js';
import type { SideRecord, TrafficRecord, TrafficResponse } from '../../src/traffic/response.js';

/** The gauges of the traffic families (what vanishes with a resource at once). */
function gaugeFamilies(f: TrafficFamilies): Family[] {
  const out: Family[] = [];
  for (const s of [f.edge, f.origin]) {
    out.push(s.bandwidth, s.requestDurationMedian);
    if (s.cacheHitRatio) out.push(s.cacheHitRatio);
    if (s.window) {
      out.push(s.window.responses, s.window.responsesByClass, s.window.requests, s.window.transferredBytes);
      if (s.window.cacheHitBytes) out.push(s.window.cacheHitBytes);
    }
  }
  if (f.resourceInfo) out.push(f.resourceInfo);
  return out;
}

/** The counters of the traffic families (kept for a day after their resource vanished). */
function counterFamilies(f: TrafficFamilies): Family[] {
  const out: Family[] = [];
  for (const s of [f.edge, f.origin]) {
    out.push(s.responses, s.responsesByClass, s.requests, s.transferredBytes);
    if (s.cacheHitBytes) out.push(s.cacheHitBytes);
  }
  return out;
}

interface MappingOptions {
  /** API metric names to keep; empty: all. Applied before a series exists. */
  metrics: readonly string[];
  /** Resource ids to keep; empty: all. */
  resources: readonly string[];
  counterRetentionMs?: number;
}

interface ApplyResult {
  /** Records dropped because they could not be attributed (no resource id with breakdown resource). */
  dropped: number;
  /** Resources counted in this window. */
  resources: number;
}

const DAY_MS = 86_400_000;

export class ReferenceTrafficMapping {
  private readonly metricAllow: Set<string> | undefined;
  private readonly resourceAllow: Set<string> | undefined;
  private readonly retentionMs: number;
  /** account -> resource -> last time (ms) it was in an answer. */
  private readonly lastSeen = new Map<string, Map<string, number>>();
  /** account -> resources of its previous answer, to find the ones that vanished. */
  private readonly previous = new Map<string, Set<string>>();
  /** Keyed gauges (per code, per range) set for each base: only these can go stale. */
  private readonly keyed = new Map<Family, Map<string, Set<string>>>();

  constructor(
    private readonly f: TrafficFamilies,
    opts: MappingOptions,
  ) {
    this.metricAllow = opts.metrics.length ? new Set(opts.metrics) : undefined;
    this.resourceAllow = opts.resources.length ? new Set(opts.resources) : undefined;
    this.retentionMs = opts.counterRetentionMs ?? DAY_MS;
  }

  private allowed(name: string): boolean {
    return this.metricAllow === undefined || this.metricAllow.has(name);
  }

  /** Counts one window [startMs, endMs) of one account. Call once per window, in window order. */
  apply(
    account: string,
    startMs: number,
    endMs: number,
    response: TrafficResponse,
    nowMs: number,
  ): ApplyResult {
    const seconds = (endMs - startMs) / 1000;
    const byResource = this.f.breakdown === 'resource';
    const seen = this.seenOf(account);
    const present = new Set<string>();
    let dropped = 0;
    for (const record of response.records) {
      let base: string[];
      if (byResource) {
        const id = record.resource;
        if (id === undefined || id === '') {
          dropped++;
          continue;
        }
        if (this.resourceAllow && !this.resourceAllow.has(id)) continue;
        if (present.has(id)) {
          // The same resource twice in one answer is not documented; counting it twice would double its traffic.
          dropped++;
          continue;
        }
        present.add(id);
        seen.set(id, nowMs);
        base = [account, id];
        this.setInfo(account, record);
      } else {
        if (present.has('')) {
          dropped++;
          continue;
        }
        present.add('');
        seen.set('', nowMs);
        base = [account];
      }
      this.applySide('edge', this.f.edge, base, record.edge, seconds);
      this.applySide('origin', this.f.origin, base, record.origin, seconds);
    }
    this.dropVanishedGauges(account, present);
    this.sweepCounters(account, nowMs);
    this.f.windows.add(this.f.windows.slot([account]), 1);
    this.f.windowEnd.set(this.f.windowEnd.slot([account]), endMs / 1000);
    return { dropped, resources: present.size };
  }

  /** Minutes that will never be counted (for example a window the API rejected with 422). */
  skip(account: string, minutes: number, reason: string): void {
    this.f.skippedSeconds.add(this.f.skippedSeconds.slot([account, reason]), minutes * 60);
  }

  /** Makes the skipped-minutes and windows series exist at 0, so increase() works from the first skip. */
  initAccount(account: string, windowMinutes: number): void {
    this.f.windows.slot([account]);
    this.f.skippedSeconds.slot([account, 'rejected']);
    this.setWindowSize(account, windowMinutes);
  }

  setWindowSize(account: string, minutes: number): void {
    this.f.windowSize.set(this.f.windowSize.slot([account]), minutes * 60);
  }

  private seenOf(account: string): Map<string, number> {
    let seen = this.lastSeen.get(account);
    if (!seen) {
      seen = new Map();
      this.lastSeen.set(account, seen);
    }
    return seen;
  }

  private setInfo(account: string, record: TrafficRecord): void {
    const info = this.f.resourceInfo;
    if (!info || record.resource === undefined) return;
    const labels = [account, record.resource, record.resourceName ?? '', record.cname ?? ''];
    if (info.find(labels) !== undefined) return;
    // A renamed resource or a changed cname replaces its info series.
    info.deleteWhere((l) => l[0] === account && l[1] === record.resource);
    info.set(info.slot(labels), 1);
  }

  private applySide(side: Side, f: SideFamilies, base: string[], r: SideRecord, seconds: number): void {
    const p = `${side}_`;
    for (const [code, n] of r.codes) {
      if (this.allowed(`${p}status_${code}`)) f.responses.add(f.responses.slot([...base, code]), n);
    }
    for (const [cls, n] of r.classes) {
      if (this.allowed(`${p}status_${cls}`))
        f.responsesByClass.add(f.responsesByClass.slot([...base, cls]), n);
    }
    if (r.requests !== undefined && this.allowed(`${p}requests_total`)) {
      f.requests.add(f.requests.slot(base), r.requests);
    }
    let bytes: number | undefined;
    if (r.bandwidthBitsPerSecond !== undefined && this.allowed(`${p}bandwidth`)) {
      // Bandwidth is an average over the window; bytes are whole, so the product is rounded.
      bytes = Math.round((r.bandwidthBitsPerSecond * seconds) / 8);
      f.transferredBytes.add(f.transferredBytes.slot(base), bytes);
      f.bandwidth.set(f.bandwidth.slot(base), r.bandwidthBitsPerSecond / 8);
    }
    if (this.allowed(`${p}request_time`)) {
      // Ranges missing from this window lose their gauge: a median of an older window is not this window's.
      this.setKeyed(f.requestDurationMedian, base, r.requestTimeSeconds, () => true);
    }
    if (f.cacheHitBytes && r.hitBytes !== undefined && this.allowed('edge_hit_bytes')) {
      f.cacheHitBytes.add(f.cacheHitBytes.slot(base), r.hitBytes);
    }
    if (f.cacheHitRatio && r.hitRatio !== undefined && this.allowed('edge_hit_ratio')) {
      f.cacheHitRatio.set(f.cacheHitRatio.slot(base), r.hitRatio);
    }
    const w = f.window;
    if (w) {
      this.setKeyed(w.responses, base, r.codes, (c) => this.allowed(`${p}status_${c}`));
      this.setKeyed(w.responsesByClass, base, r.classes, (c) => this.allowed(`${p}status_${c}`));
      if (r.requests !== undefined && this.allowed(`${p}requests_total`))
        w.requests.set(w.requests.slot(base), r.requests);
      if (bytes !== undefined) w.transferredBytes.set(w.transferredBytes.slot(base), bytes);
      if (w.cacheHitBytes && r.hitBytes !== undefined && this.allowed('edge_hit_bytes')) {
        w.cacheHitBytes.set(w.cacheHitBytes.slot(base), r.hitBytes);
      }
    }
  }

  /** Sets one gauge per key for this base and deletes the keys it had before but not now. */
  private setKeyed(
    family: Family,
    base: string[],
    values: ReadonlyMap<string, number>,
    keep: (key: string) => boolean,
  ): void {
    let byBase = this.keyed.get(family);
    if (!byBase) {
      byBase = new Map();
      this.keyed.set(family, byBase);
    }
    const id = base.join('\u0000');
    const before = byBase.get(id);
    const now = new Set<string>();
    for (const [k, v] of values) {
      if (!keep(k)) continue;
      now.add(k);
      family.set(family.slot([...base, k]), v);
    }
    if (before) for (const k of before) if (!now.has(k)) family.delete([...base, k]);
    byBase.set(id, now);
  }

  private dropVanishedGauges(account: string, present: Set<string>): void {
    const before = this.previous.get(account);
    this.previous.set(account, present);
    if (!before) return;
    const vanished = new Set<string>();
    for (const id of before) if (!present.has(id)) vanished.add(id);
    if (vanished.size === 0) return;
    const byResource = this.f.breakdown === 'resource';
    const gone = (l: readonly string[]) => l[0] === account && vanished.has(byResource ? (l[1] ?? '') : '');
    for (const family of gaugeFamilies(this.f)) family.deleteWhere(gone);
    for (const byBase of this.keyed.values()) {
      for (const id of vanished) byBase.delete(byResource ? `${account}\u0000${id}` : account);
    }
  }

  private sweepCounters(account: string, nowMs: number): void {
    const seen = this.lastSeen.get(account);
    if (!seen) return;
    const expired = new Set<string>();
    for (const [id, at] of seen) if (nowMs - at >= this.retentionMs) expired.add(id);
    if (expired.size === 0) return;
    for (const id of expired) seen.delete(id);
    const byResource = this.f.breakdown === 'resource';
    const match = (l: readonly string[]) => l[0] === account && expired.has(byResource ? (l[1] ?? '') : '');
    for (const family of counterFamilies(this.f)) family.deleteWhere(match);
  }
}
