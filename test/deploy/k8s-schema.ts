/**
 * Strict schema checks of rendered manifests: each document against its kind's OpenAPI schema, from the npm
 * packages kubernetes-models (the Kubernetes API) and @kubernetes-models/prometheus-operator (the
 * monitoring.coreos.com CRDs).
 *
 * Strict means an unknown field is an error, as the API server's strict field validation (kubectl's default
 * `--validate=strict`) makes it. The packages' schemas do not say so themselves: like Kubernetes' OpenAPI they have
 * no `additionalProperties: false`, so their validators skip a field they do not know. The check therefore watches
 * the validator read the document: a validator reads every property its schema names (`data.name`) and lists the
 * keys of a map it checks value by value (`additionalProperties: {…}`, labels for one). A key of an object whose
 * properties the validator looked up, but never itself, is a field the schema does not know. An object the
 * validator never looked into has a free-form schema (`x-kubernetes-preserve-unknown-fields`, `type: object`).
 */

import {
  PrometheusRule,
  ServiceMonitor,
} from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, PersistentVolumeClaim, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';

interface ModelClass {
  apiVersion: string;
  kind: string;
  prototype: { validate(): void };
}

/** Every kind the chart renders, by `apiVersion/kind`. */
const MODELS: ModelClass[] = [
  Deployment,
  StatefulSet,
  PodDisruptionBudget,
  ConfigMap,
  PersistentVolumeClaim,
  Secret,
  Service,
  ServiceAccount,
  PrometheusRule,
  ServiceMonitor,
];
const BY_TYPE = new Map(MODELS.map((m) => [`${m.apiVersion}/${m.kind}`, m]));

/** What the validator did with one object: the properties it looked up, and whether it listed the keys. */
interface Seen {
  read: Set<string>;
  listed: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The errors of one manifest: its kind unknown to the schemas, a schema violation (ajv's message with the
 * path), or `PATH: unknown field`. Empty when it is valid.
 */
export function manifestErrors(doc: Record<string, unknown>): string[] {
  const type = `${String(doc.apiVersion)}/${String(doc.kind)}`;
  const model = BY_TYPE.get(type);
  if (!model) return [`${type}: no schema for this kind`];

  const seen = new WeakMap<object, Seen>();
  const proxies = new WeakMap<object, object>();
  const track = (value: unknown): unknown => {
    if (typeof value !== 'object' || value === null) return value;
    const cached = proxies.get(value);
    if (cached) return cached;
    const record: Seen = { read: new Set(), listed: false };
    seen.set(value, record);
    const proxy = new Proxy(value, {
      get(target, key, receiver) {
        if (typeof key === 'string') record.read.add(key);
        return track(Reflect.get(target, key, receiver));
      },
      ownKeys(target) {
        record.listed = true;
        return Reflect.ownKeys(target);
      },
    });
    proxies.set(value, proxy);
    return proxy;
  };

  const errors: string[] = [];
  try {
    // The model's validate() checks `this`: the watched document.
    model.prototype.validate.call(track(doc));
  } catch (e) {
    errors.push((e as Error).message);
  }

  const walk = (node: unknown, path: string): void => {
    if (Array.isArray(node)) {
      node.forEach((item, i) => {
        walk(item, `${path}/${i}`);
      });
      return;
    }
    if (!isObject(node)) return;
    const record = seen.get(node);
    // Never looked into: a free-form object. Listed: a map whose every key the validator checked.
    const strict = record !== undefined && record.read.size > 0 && !record.listed;
    for (const [key, value] of Object.entries(node)) {
      if (strict && !record.read.has(key)) errors.push(`${path}/${key}: unknown field`);
      else walk(value, `${path}/${key}`);
    }
  };
  walk(doc, '');
  return errors;
}
