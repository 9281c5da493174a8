/**
 * Maps one listing of an account's recording settings onto the recording families. No I/O.
 * Settings missing from the newest listing, or marked inactive, lose their series at once.
 *
 * Caps (issue 15), as for traffic resources: a setting new to the store is admitted whole or refused whole, new
 * ones in the order of their ids, while `limits.max_series` leaves room; an id longer than
 * `limits.max_label_length` is refused; longer descriptive labels (source path, domain, ...) are truncated.
 */
import { overLength, type RefusalReason, type SeriesLimits, truncateLabel } from '../store/limits.js';
import type { Family } from '../store/types.js';
import type { RecordingFamilies } from './metrics.js';
import {
  effectiveStatus,
  RECORDING_STATUSES,
  type RecordingSetting,
  type RecordingStatus,
} from './response.js';

export interface RecordingSummary {
  account: string;
  id: string;
  status?: RecordingStatus;
  sourcePath?: string;
  sourceDomain?: string;
  resourceId?: string;
}

export type RecordingLimits = SeriesLimits;

/** Series one setting has at most: info, one per status, instances, last start and stop, DVR on and window, storage. */
export const SERIES_PER_SETTING = 1 + RECORDING_STATUSES.length + 6;

export class RecordingsMapping {
  private readonly ids = new Map<string, Set<string>>();
  /**
   * Per account, per id exposed, the labels of its cdn_recording_info series: a setting's series are deleted by
   * their exact labels. A scan of the family per setting (deleteWhere) made a listing of 25k new settings take
   * 86 s on the event loop.
   */
  private readonly infoLabels = new Map<string, Map<string, readonly string[]>>();
  /** Series refused by the last apply, by reason (empty: none). */
  refused: Partial<Record<RefusalReason, number>> = {};
  /** Label values truncated by the last apply. */
  truncated = 0;

  constructor(
    private readonly f: RecordingFamilies,
    private readonly limits?: RecordingLimits,
  ) {}

  apply(account: string, settings: readonly RecordingSetting[]): RecordingSummary[] {
    const before = this.ids.get(account) ?? new Set<string>();
    const labelsBefore = this.infoLabels.get(account) ?? new Map<string, readonly string[]>();
    const labelsNow = new Map<string, readonly string[]>();
    const now = new Set<string>();
    const out: RecordingSummary[] = [];
    const refusedIds = this.admit(settings, before);
    for (const s of settings) {
      if (s.active === false || now.has(s.id) || refusedIds.has(s.id)) continue;
      now.add(s.id);
      const id = [account, s.id];
      const status = effectiveStatus(s);
      const info = this.f.info;
      const infoLabels = [
        account,
        s.id,
        this.fit(s.resourceId ?? ''),
        this.fit(s.streamType ?? ''),
        this.fit(s.launchType ?? ''),
        this.fit(s.sourceDomain ?? ''),
        this.fit(s.sourcePath ?? ''),
      ];
      if (info.find(infoLabels) === undefined) {
        const old = labelsBefore.get(s.id);
        if (old) info.delete(old);
        info.set(info.slot(infoLabels), 1);
      }
      // Kept from this listing, not the first: what the mapping holds of an answer goes with the next one.
      labelsNow.set(s.id, infoLabels);
      if (status) {
        for (const st of RECORDING_STATUSES)
          this.f.status.set(this.f.status.slot([...id, st]), st === status ? 1 : 0);
      } else if (before.has(s.id)) {
        for (const st of RECORDING_STATUSES) this.f.status.delete([...id, st]);
      }
      const set = (family: Family, v: number | undefined) => {
        if (v === undefined || !Number.isFinite(v)) family.delete(id);
        else family.set(family.slot(id), v);
      };
      let lastStart: number | undefined;
      let lastStop: number | undefined;
      for (const r of s.records) {
        if (r.start !== undefined) lastStart = Math.max(lastStart ?? r.start, r.start);
        if (r.stop !== undefined) lastStop = Math.max(lastStop ?? r.stop, r.stop);
      }
      set(this.f.instances, s.records.length);
      set(this.f.lastStart, lastStart === undefined ? undefined : lastStart / 1000);
      set(this.f.lastStop, lastStop === undefined ? undefined : lastStop / 1000);
      set(this.f.dvrEnabled, s.dvrEnabled === undefined ? undefined : s.dvrEnabled ? 1 : 0);
      set(this.f.dvrWindow, s.dvrWindow);
      set(
        this.f.storage,
        s.storageTime === undefined || s.storageTime < 0 ? s.storageTime : s.storageTime * 86_400,
      );
      out.push({
        account,
        id: s.id,
        status,
        // The landing page shows these: cut as the labels are.
        sourcePath: s.sourcePath === undefined ? undefined : infoLabels[6],
        sourceDomain: s.sourceDomain === undefined ? undefined : infoLabels[5],
        resourceId: s.resourceId === undefined ? undefined : infoLabels[2],
      });
    }
    for (const gone of before) if (!now.has(gone)) this.remove(account, gone, labelsBefore.get(gone));
    this.ids.set(account, now);
    this.infoLabels.set(account, labelsNow);
    return out;
  }

  /** The ids of new settings refused in this listing (see the module comment); sets `refused` and `truncated`. */
  private admit(settings: readonly RecordingSetting[], before: ReadonlySet<string>): Set<string> {
    this.refused = {};
    this.truncated = 0;
    const refused = new Set<string>();
    const limits = this.limits;
    if (!limits) return refused;
    const fresh = new Set<string>();
    for (const s of settings) {
      if (s.active === false || before.has(s.id) || fresh.has(s.id) || refused.has(s.id)) continue;
      if (overLength(s.id, limits.maxLabelLength)) {
        refused.add(s.id);
        this.refused.label_too_long = (this.refused.label_too_long ?? 0) + SERIES_PER_SETTING;
      } else fresh.add(s.id);
    }
    const room = Math.floor((limits.maxSeries - limits.storeSize()) / SERIES_PER_SETTING);
    if (fresh.size > room) {
      const sorted = [...fresh].sort();
      for (const id of sorted.slice(Math.max(0, room))) {
        refused.add(id);
        this.refused.max_series = (this.refused.max_series ?? 0) + SERIES_PER_SETTING;
      }
    }
    return refused;
  }

  private fit(value: string): string {
    const cut = this.limits ? truncateLabel(value, this.limits.maxLabelLength) : undefined;
    if (cut === undefined) return value;
    this.truncated++;
    return cut;
  }

  /** Removes every series of an account (discovery stopped polling it). */
  removeAccount(account: string): void {
    const labels = this.infoLabels.get(account);
    for (const id of this.ids.get(account) ?? []) this.remove(account, id, labels?.get(id));
    this.ids.delete(account);
    this.infoLabels.delete(account);
  }

  /** Deletes every series of one exposed setting, by their exact labels. */
  private remove(account: string, id: string, infoLabels: readonly string[] | undefined): void {
    const { info, status, ...single } = this.f;
    if (infoLabels) info.delete(infoLabels);
    else info.deleteWhere((l) => l[0] === account && l[1] === id);
    for (const st of RECORDING_STATUSES) status.delete([account, id, st]);
    for (const family of Object.values(single) as Family[]) family.delete([account, id]);
  }
}
