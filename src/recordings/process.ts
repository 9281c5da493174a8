/**
 * Maps one listing of an account's recording settings onto the recording families. No I/O.
 * Settings missing from the newest listing, or marked inactive, lose their series at once.
 */
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

export class RecordingsProcess {
  private readonly ids = new Map<string, Set<string>>();

  constructor(private readonly f: RecordingFamilies) {}

  apply(account: string, settings: readonly RecordingSetting[]): RecordingSummary[] {
    const before = this.ids.get(account) ?? new Set<string>();
    const now = new Set<string>();
    const out: RecordingSummary[] = [];
    for (const s of settings) {
      if (s.active === false || now.has(s.id)) continue;
      now.add(s.id);
      const id = [account, s.id];
      const status = effectiveStatus(s);
      const info = this.f.info;
      const infoLabels = [
        account,
        s.id,
        s.resourceId ?? '',
        s.streamType ?? '',
        s.launchType ?? '',
        s.sourceDomain ?? '',
        s.sourcePath ?? '',
      ];
      if (info.find(infoLabels) === undefined) {
        info.deleteWhere((l) => l[0] === account && l[1] === s.id);
        info.set(info.slot(infoLabels), 1);
      }
      if (status) {
        for (const st of RECORDING_STATUSES)
          this.f.status.set(this.f.status.slot([...id, st]), st === status ? 1 : 0);
      } else {
        this.f.status.deleteWhere((l) => l[0] === account && l[1] === s.id);
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
        sourcePath: s.sourcePath,
        sourceDomain: s.sourceDomain,
        resourceId: s.resourceId,
      });
    }
    for (const gone of before) if (!now.has(gone)) this.remove(account, gone);
    this.ids.set(account, now);
    return out;
  }

  /** Removes every series of an account (discovery stopped polling it). */
  removeAccount(account: string): void {
    for (const id of this.ids.get(account) ?? []) this.remove(account, id);
    this.ids.delete(account);
  }

  private remove(account: string, id: string): void {
    for (const family of Object.values(this.f) as Family[])
      family.deleteWhere((l) => l[0] === account && l[1] === id);
  }
}
