/**
 * The upstream API's own names, in one place: the status codes and classes of `*_status_<suffix>`, the size
 * ranges of `*_request_time`, the two sides, the metric names and the two breakdowns. The parser, the config
 * schema, the simulator and the tests all read them from here (see ./README.md). Values are exactly as the API
 * spells them; nothing here depends on any other module of the exporter.
 */

/** The eight response-size ranges of the `*_request_time` metrics, as the API names them. */
export const SIZE_RANGES = [
  '0_250k',
  '250k_500k',
  '500k_750k',
  '750k_1m',
  '1m_2m',
  '2m_3m',
  '3m_4m',
  '4M+',
] as const;
export type SizeRange = (typeof SIZE_RANGES)[number];

/** The documented exact status codes, by class. Other codes may occur in answers (the parser keeps them). */
export const CODES_BY_CLASS = {
  '2xx': ['200', '204', '206'],
  '3xx': ['301', '302', '304'],
  '4xx': ['400', '401', '403', '404', '416', '429'],
  '5xx': ['500', '501', '502', '503', '504', '505'],
} as const;
export type StatusClass = keyof typeof CODES_BY_CLASS;

/** Status classes of `*_status_<class>`, as documented. */
export const STATUS_CLASSES = Object.keys(CODES_BY_CLASS) as StatusClass[];
/** Exact status suffixes of `*_status_<code>`, as documented, in the document's order. */
export const STATUS_CODES: readonly string[] = STATUS_CLASSES.flatMap((c) => [...CODES_BY_CLASS[c]]);
/** Every suffix of `*_status_<suffix>`, each class after its codes (the document's order). */
export const STATUS_SUFFIXES: readonly string[] = STATUS_CLASSES.flatMap((c) => [...CODES_BY_CLASS[c], c]);

/** The two sides every traffic metric is reported for. Origin has no hit metrics. */
export type Side = 'edge' | 'origin';
export const SIDES: readonly Side[] = ['edge', 'origin'];

/** Every metric name the traffic API documents, in the document's order. */
export const METRIC_NAMES: readonly string[] = [
  'origin_bandwidth',
  ...STATUS_SUFFIXES.map((s) => `origin_status_${s}`),
  'origin_request_time',
  'origin_requests_total',
  'edge_bandwidth',
  ...STATUS_SUFFIXES.map((s) => `edge_status_${s}`),
  'edge_request_time',
  'edge_requests_total',
  'edge_hit_ratio',
  'edge_hit_bytes',
];

/**
 * The two endpoints of the traffic API: `/resources` (one element per resource) and `/` (the account as one
 * element). The configuration key `metrics.breakdown` names them the same way.
 */
export const BREAKDOWNS = ['resource', 'account'] as const;
export type Breakdown = (typeof BREAKDOWNS)[number];
