/** Answers of the dvr-net and recorder-cloud APIs as their documents show them, for the parser tests. */

export function range(from: number, duration: unknown) {
  return { from, duration };
}

export function entry(host: string, over: Record<string, unknown> = {}, dvr: Record<string, unknown> = {}) {
  return {
    stream_name: 'live/main',
    host,
    is_alive: true,
    dvr: {
      enabled: true,
      window: 3600,
      duration: 500,
      from: 1_767_268_800,
      ranges: [range(1_767_268_800, 300), range(1_767_269_200, 200)],
      ...dvr,
    },
    ...over,
  };
}

export function setting(over: Record<string, unknown> = {}) {
  return {
    id: 'rec-1',
    resource_id: '1004',
    account_name: 'acme',
    source_domain: 'live.example',
    source_path: '/live/main/playlist.m3u8',
    stream_type: 'long',
    launch_type: 'stream_start',
    stop_timeout: 1800,
    storage_time: -1,
    dvr_enabled: true,
    dvr_window: 43200,
    smil: false,
    qualities: { 'https://live.example/720.m3u8': '720p' },
    records: [{ start: '2026-01-01T10:00:00Z', stop: '2026-01-01T11:00:00Z', init_path: '/records/a.m3u8' }],
    path: '/records/a.m3u8',
    ...over,
  };
}
