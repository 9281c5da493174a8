/**
 * The simulator's default world: the accounts, resources, DVR streams and recording settings that the demo, the
 * dashboards' screenshots and the end-to-end tests see when nothing else is configured.
 */
import type { TrafficScale } from './traffic-model.js';
import type { SimAccount } from './types.js';

export function demoWorld(): SimAccount[] {
  return [
    {
      name: 'demo',
      token: 'demo-token',
      resources: [
        { id: '1001', name: 'www', cname: 'www.cdn.demo.example' },
        { id: '1002', name: 'images', cname: 'img.cdn.demo.example' },
        { id: '1003', name: 'vod', cname: 'vod.cdn.demo.example' },
        { id: '1004', name: 'live-hls', cname: 'live.cdn.demo.example' },
        { id: '1005', name: 'staging', cname: 'staging.cdn.demo.example' },
      ],
      streams: [
        {
          name: 'live/main',
          hosts: ['dvr-1.demo.example', 'dvr-2.demo.example'],
          alive: true,
          breakEverySec: 900,
        },
        { name: 'news/hd', hosts: ['dvr-1.demo.example'], alive: false },
        { name: 'sport/4k', hosts: ['dvr-2.demo.example', 'dvr-3.demo.example'], window: 7200 },
      ],
      recordings: [
        {
          streamName: 'live/main',
          source: 'https://live.cdn.demo.example/live/main/playlist.m3u8',
          streamType: 'long',
          launchType: 'stream_start',
          resourceId: '1004',
          status: 'progress',
        },
        {
          streamName: 'news/hd',
          source: 'https://live.cdn.demo.example/news/hd/playlist.m3u8',
          streamType: 'short',
          launchType: 'button',
          resourceId: '1004',
          status: 'wait',
        },
        {
          streamName: 'sport/4k',
          source: 'https://live.cdn.demo.example/sport/4k/playlist.m3u8',
          streamType: 'short',
          launchType: 'schedule',
          resourceId: '1004',
          status: 'finish',
        },
        {
          streamName: 'events/keynote',
          source: 'https://live.cdn.demo.example/events/keynote/playlist.m3u8',
          streamType: 'short',
          launchType: 'stream_start',
          status: 'error',
        },
      ],
    },
    {
      name: 'acme',
      token: 'acme-token',
      resources: [
        { id: '2001', name: 'shop', cname: 'shop.cdn.acme.example' },
        { id: '2002', name: 'downloads', cname: 'dl.cdn.acme.example' },
        { id: '2003', name: 'live', cname: 'live.cdn.acme.example' },
      ],
      streams: [
        { name: 'tv/channel1', hosts: ['edge-a.acme.example', 'edge-b.acme.example'], breakEverySec: 1200 },
      ],
      recordings: [],
    },
  ];
}

/**
 * Traffic volume of the demo world: `staging` serves nothing (it must still be listed), `vod` twice what the seed
 * draws for it (a volume drawn per resource: which is busiest is the seed's).
 */
export const DEMO_TRAFFIC_SCALE: TrafficScale = {
  'demo/1005': 0,
  'demo/1003': 2,
  'acme/2002': 0.5,
};

/** The demo's login user (sees every account of the world); the demo logs in with it. */
export const DEMO_USER = 'monitoring@demo.example';
export const DEMO_PASSWORD = 'demo-password';
