/**
 * A small interpreter of Go's text/template with the Sprig and Helm functions this chart uses, so the tests can
 * render templates the way `helm template` does on machines without Helm. It covers what the chart's templates
 * are written with: actions with trim markers, comments, `define`/`include`, `if`/`else if`/`else`, `with`,
 * `range` (with `$i, $v :=`), variables (`:=`, `=`), pipelines, parenthesised commands, raw and quoted strings,
 * and the functions in FUNCTIONS. Anything else is an error naming it, never a silent empty string: a template
 * that uses a construct this does not know fails the test instead of passing it unchecked.
 *
 * Known differences from Helm: `toYaml` is the `yaml` package's output (the same data, not byte for byte the same
 * text), numbers are JavaScript numbers, and map iteration in `range` follows key order sorted as Go does.
 */
import { createHash } from 'node:crypto';
import { parse, stringify } from 'yaml';

type Value = unknown;
type Scope = Map<string, Value>;

interface TextNode {
  kind: 'text';
  text: string;
}
interface ActionNode {
  kind: 'action';
  pipe: Pipeline;
}
interface IfNode {
  kind: 'if' | 'with';
  branches: Array<{ pipe: Pipeline | undefined; body: Node[] }>;
}
interface RangeNode {
  kind: 'range';
  pipe: Pipeline;
  body: Node[];
  otherwise: Node[];
}
type Node = TextNode | ActionNode | IfNode | RangeNode;

interface Pipeline {
  decl: string[];
  /** `=` (assign to an existing variable) rather than `:=`. */
  assign: boolean;
  commands: Operand[][];
}

type Operand =
  | { t: 'field'; base: 'dot' | 'root' | 'var'; name?: string; path: string[] }
  | { t: 'lit'; value: Value }
  | { t: 'fn'; name: string }
  | { t: 'sub'; pipe: Pipeline; path: string[] };

export class TemplateError extends Error {}

/** Raised by the template's own `fail`. */
export class TemplateFail extends Error {}

// ---- lexing: text and actions ------------------------------------------------------------------------------

function splitActions(src: string): Array<{ text: string } | { action: string }> {
  const out: Array<{ text: string } | { action: string }> = [];
  let at = 0;
  let text = '';
  while (at < src.length) {
    const open = src.indexOf('{{', at);
    if (open < 0) {
      text += src.slice(at);
      break;
    }
    text += src.slice(at, open);
    let inner = open + 2;
    const trimLeft = src.startsWith('- ', inner) || src.startsWith('-\n', inner);
    if (trimLeft) inner += 1;
    // A comment may contain `}}`; it ends at `*/}}` (with optional ` -`).
    const rest = src.slice(inner).trimStart();
    let close: number;
    if (rest.startsWith('/*')) {
      const end = src.indexOf('*/', inner);
      if (end < 0) throw new TemplateError('unclosed comment');
      close = src.indexOf('}}', end);
    } else close = findClose(src, inner);
    if (close < 0) throw new TemplateError(`unclosed action at ${open}`);
    let body = src.slice(inner, close);
    const trimRight = /\s-$/.test(body);
    if (trimRight) body = body.slice(0, -1);
    if (trimLeft) text = text.replace(/\s+$/, '');
    out.push({ text });
    text = '';
    out.push({ action: body.trim() });
    at = close + 2;
    if (trimRight) {
      const m = /^\s*/.exec(src.slice(at));
      at += m ? m[0].length : 0;
    }
  }
  out.push({ text });
  return out;
}

/** The `}}` that closes an action, skipping strings. */
function findClose(src: string, from: number): number {
  for (let i = from; i < src.length; i++) {
    const c = src[i];
    if (c === '"') {
      for (i++; i < src.length && src[i] !== '"'; i++) if (src[i] === '\\') i++;
    } else if (c === '`') {
      i = src.indexOf('`', i + 1);
      if (i < 0) return -1;
    } else if (c === '}' && src[i + 1] === '}') return i;
  }
  return -1;
}

// ---- parsing actions --------------------------------------------------------------------------------------

function tokenize(s: string): string[] {
  const tokens: string[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '"') {
      let j = i + 1;
      for (; j < s.length && s[j] !== '"'; j++) if (s[j] === '\\') j++;
      tokens.push(s.slice(i, j + 1));
      i = j + 1;
    } else if (c === '`') {
      const j = s.indexOf('`', i + 1);
      tokens.push(s.slice(i, j + 1));
      i = j + 1;
    } else if (c === '(' || c === ')' || c === '|' || c === ',') {
      tokens.push(c);
      i++;
    } else if (s.startsWith(':=', i)) {
      tokens.push(':=');
      i += 2;
    } else if (c === '=' && s[i + 1] !== '=') {
      tokens.push('=');
      i++;
    } else {
      let j = i;
      while (j < s.length && !/[\s()|,]/.test(s[j]!) && !s.startsWith(':=', j)) j++;
      // `)` directly followed by `.field`: a field of the parenthesised value.
      tokens.push(s.slice(i, j));
      i = j;
    }
  }
  return tokens;
}

class ActionParser {
  private at = 0;
  constructor(private readonly tokens: string[]) {}

  pipeline(): Pipeline {
    const decl: string[] = [];
    let assign = false;
    // `$a :=`, `$a =`, `$i, $v :=`
    const save = this.at;
    const vars: string[] = [];
    while (this.tokens[this.at]?.startsWith('$')) {
      vars.push(this.tokens[this.at]!);
      this.at++;
      if (this.tokens[this.at] === ',') this.at++;
      else break;
    }
    if (vars.length && (this.tokens[this.at] === ':=' || this.tokens[this.at] === '=')) {
      assign = this.tokens[this.at] === '=';
      decl.push(...vars);
      this.at++;
    } else this.at = save;
    const commands: Operand[][] = [];
    let cmd: Operand[] = [];
    while (this.at < this.tokens.length && this.tokens[this.at] !== ')') {
      const tok = this.tokens[this.at]!;
      if (tok === '|') {
        commands.push(cmd);
        cmd = [];
        this.at++;
        continue;
      }
      cmd.push(this.operand());
    }
    commands.push(cmd);
    if (commands.some((c) => c.length === 0))
      throw new TemplateError(`empty command in ${this.tokens.join(' ')}`);
    return { decl, assign, commands };
  }

  private operand(): Operand {
    const tok = this.tokens[this.at++]!;
    if (tok === '(') {
      const pipe = this.pipeline();
      if (this.tokens[this.at++] !== ')') throw new TemplateError('missing )');
      const next = this.tokens[this.at];
      let path: string[] = [];
      if (next?.startsWith('.')) {
        path = next.slice(1).split('.');
        this.at++;
      }
      return { t: 'sub', pipe, path };
    }
    if (tok.startsWith('"')) return { t: 'lit', value: JSON.parse(tok) as string };
    if (tok.startsWith('`')) return { t: 'lit', value: tok.slice(1, -1) };
    if (/^-?\d+(\.\d+)?$/.test(tok)) return { t: 'lit', value: Number(tok) };
    if (tok === 'true' || tok === 'false') return { t: 'lit', value: tok === 'true' };
    if (tok === 'nil') return { t: 'lit', value: undefined };
    if (tok === '.') return { t: 'field', base: 'dot', path: [] };
    if (tok.startsWith('.')) return { t: 'field', base: 'dot', path: tok.slice(1).split('.') };
    if (tok === '$') return { t: 'field', base: 'root', path: [] };
    if (tok.startsWith('$.')) return { t: 'field', base: 'root', path: tok.slice(2).split('.') };
    if (tok.startsWith('$')) {
      const [name, ...path] = tok.split('.');
      return { t: 'field', base: 'var', name, path };
    }
    if (/^[A-Za-z_]\w*$/.test(tok)) return { t: 'fn', name: tok };
    throw new TemplateError(`cannot parse ${tok}`);
  }
}

function parsePipeline(text: string): Pipeline {
  return new ActionParser(tokenize(text)).pipeline();
}

function parseTemplate(src: string, defines: Map<string, Node[]>): Node[] {
  const parts = splitActions(src);
  let i = 0;
  const block = (ends: string[]): { nodes: Node[]; end: string } => {
    const nodes: Node[] = [];
    while (i < parts.length) {
      const part = parts[i++]!;
      if ('text' in part) {
        if (part.text) nodes.push({ kind: 'text', text: part.text });
        continue;
      }
      const a = part.action;
      if (a.startsWith('/*')) continue;
      const word = /^(\w+)\b\s*([\s\S]*)$/.exec(a);
      const keyword = word?.[1];
      const rest = word?.[2] ?? '';
      if (keyword && ends.some((e) => keyword === e)) return { nodes, end: a };
      if (keyword === 'if' || keyword === 'with') {
        const node: IfNode = { kind: keyword, branches: [] };
        let cond: Pipeline | undefined = parsePipeline(rest);
        for (;;) {
          const { nodes: body, end } = block(['else', 'end']);
          node.branches.push({ pipe: cond, body });
          if (end === 'end') break;
          const elseIf = /^else\s+(if|with)\s+([\s\S]+)$/.exec(end);
          if (elseIf) cond = parsePipeline(elseIf[2]!);
          else if (end === 'else') cond = undefined;
          else throw new TemplateError(`unexpected ${end}`);
          if (cond === undefined) {
            const { nodes: last } = block(['end']);
            node.branches.push({ pipe: undefined, body: last });
            break;
          }
        }
        nodes.push(node);
      } else if (keyword === 'range') {
        const pipe = parsePipeline(rest);
        const { nodes: body, end } = block(['else', 'end']);
        const otherwise = end === 'else' ? block(['end']).nodes : [];
        nodes.push({ kind: 'range', pipe, body, otherwise });
      } else if (keyword === 'define') {
        const name = JSON.parse(rest.trim()) as string;
        defines.set(name, block(['end']).nodes);
      } else if (keyword === 'end' || keyword === 'else') {
        throw new TemplateError(`unexpected {{${a}}}`);
      } else if (
        keyword === 'template' ||
        keyword === 'block' ||
        keyword === 'break' ||
        keyword === 'continue'
      ) {
        throw new TemplateError(`{{${keyword}}} is not supported by this renderer`);
      } else nodes.push({ kind: 'action', pipe: parsePipeline(a) });
    }
    if (ends.length) throw new TemplateError(`missing {{end}} (wanted ${ends.join('/')})`);
    return { nodes, end: '' };
  };
  return block([]).nodes;
}

// ---- evaluation -------------------------------------------------------------------------------------------

function isMap(v: Value): v is Record<string, Value> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function truthy(v: Value): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (isMap(v)) return Object.keys(v).length > 0;
  return true;
}

function str(v: Value): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map(str).join(' ')}]`;
  return `map[${Object.keys(v as object)
    .sort()
    .map((k) => `${k}:${str((v as Record<string, Value>)[k])}`)
    .join(' ')}]`;
}

/** Sprig's merge: copies keys missing from dst (deeply for maps); dst wins; dst is changed and returned. */
function mergeInto(dst: Record<string, Value>, src: Value): Record<string, Value> {
  if (!isMap(src)) return dst;
  for (const [k, v] of Object.entries(src)) {
    if (!(k in dst) || dst[k] === undefined) dst[k] = v;
    else if (isMap(dst[k]) && isMap(v)) mergeInto(dst[k] as Record<string, Value>, v);
  }
  return dst;
}

function goQuote(s: string): string {
  return JSON.stringify(s);
}

function printf(format: string, ...args: Value[]): string {
  let n = 0;
  return format.replace(/%([sqdv%])/g, (_, verb: string) => {
    if (verb === '%') return '%';
    const a = args[n++];
    if (verb === 'q') return goQuote(str(a));
    if (verb === 'd') return String(Math.trunc(Number(a)));
    return str(a);
  });
}

function toYaml(v: Value): string {
  if (v === undefined || v === null) return 'null';
  return stringify(v, { lineWidth: 0, sortMapEntries: true }).replace(/\n$/, '');
}

export interface RenderContext {
  Values: Record<string, Value>;
  Release: { Name: string; Namespace: string; Service: string };
  Chart: Record<string, Value>;
  Capabilities: { KubeVersion: { Version: string } };
  Files: { Get: (path: string) => string };
}

export class ChartRenderer {
  private readonly defines = new Map<string, Node[]>();

  /** `helpers`: the text of every _*.tpl file, whose defines every template can include. */
  constructor(helpers: string[]) {
    for (const h of helpers) parseTemplate(h, this.defines);
  }

  render(template: string, ctx: RenderContext): string {
    const nodes = parseTemplate(template, this.defines);
    return this.exec(nodes, ctx, ctx, [new Map()]);
  }

  private readonly functions: Record<
    string,
    (this: ChartRenderer, root: RenderContext, ...a: Value[]) => Value
  > = {
    include(root, name, data) {
      const body = this.defines.get(String(name));
      if (!body) throw new TemplateError(`include of undefined template "${String(name)}"`);
      return this.exec(body, data, root, [new Map()]);
    },
    toYaml: (_r, v) => toYaml(v),
    fromYaml: (_r, s) => (parse(String(s ?? '')) as Value) ?? {},
    nindent: (_r, n, s) => `\n${indent(Number(n), str(s))}`,
    indent: (_r, n, s) => indent(Number(n), str(s)),
    default: (_r, d, v) => (truthy(v) ? v : d),
    dict: (_r, ...kv) => {
      const out: Record<string, Value> = {};
      for (let i = 0; i < kv.length; i += 2) out[str(kv[i])] = kv[i + 1];
      return out;
    },
    list: (_r, ...items) => [...items],
    append: (_r, l, v) => [...((l as Value[]) ?? []), v],
    index: (_r, m, ...keys) => {
      let v: Value = m;
      for (const k of keys) {
        if (v === undefined || v === null) throw new TemplateError(`index of nil with ${str(k)}`);
        v = (v as Record<string, Value>)[str(k)];
      }
      return v;
    },
    merge: (_r, dst, ...srcs) => {
      let out = dst as Record<string, Value>;
      for (const s of srcs) out = mergeInto(out, s);
      return out;
    },
    set: (_r, m, k, v) => {
      (m as Record<string, Value>)[str(k)] = v;
      return m;
    },
    deepCopy: (_r, v) => structuredClone(v ?? {}),
    printf: (_r, f, ...a) => printf(str(f), ...a),
    replace: (_r, o, n, s) => str(s).split(str(o)).join(str(n)),
    lower: (_r, s) => str(s).toLowerCase(),
    toString: (_r: RenderContext, v: Value) => str(v),
    quote: (_r, ...v) => v.map((x) => goQuote(str(x))).join(' '),
    eq: (_r, a, ...b) => b.some((x) => x === a),
    ne: (_r, a, b) => a !== b,
    gt: (_r, a, b) => Number(a) > Number(b),
    not: (_r, v) => !truthy(v),
    and: (_r, ...v) => v.find((x) => !truthy(x)) ?? v.at(-1),
    or: (_r, ...v) => v.find((x) => truthy(x)) ?? v.at(-1),
    int: (_r, v) => Math.trunc(Number(v ?? 0)),
    fail: (_r, msg) => {
      throw new TemplateFail(str(msg));
    },
    trunc: (_r, n, s) => str(s).slice(0, Number(n)),
    trimSuffix: (_r, suf, s) => (str(s).endsWith(str(suf)) ? str(s).slice(0, -str(suf).length) : str(s)),
    contains: (_r, sub, s) => str(s).includes(str(sub)),
    b64enc: (_r, s) => Buffer.from(str(s)).toString('base64'),
    sha256sum: (_r, s) => createHash('sha256').update(str(s)).digest('hex'),
    kindIs: (_r, kind, v) =>
      (kind === 'string' && typeof v === 'string') ||
      (kind === 'map' && isMap(v)) ||
      (kind === 'slice' && Array.isArray(v)),
  };

  private exec(nodes: Node[], dot: Value, root: RenderContext, scopes: Scope[]): string {
    let out = '';
    for (const node of nodes) {
      if (node.kind === 'text') out += node.text;
      else if (node.kind === 'action') {
        const v = this.pipeline(node.pipe, dot, root, scopes);
        if (node.pipe.decl.length === 0) out += str(v);
      } else if (node.kind === 'if' || node.kind === 'with') {
        for (const b of node.branches) {
          const inner: Scope[] = [...scopes, new Map()];
          const v = b.pipe ? this.pipeline(b.pipe, dot, root, inner) : true;
          if (truthy(v)) {
            const newDot = node.kind === 'with' && b.pipe ? v : dot;
            out += this.exec(b.body, newDot, root, inner);
            break;
          }
        }
      } else if (node.kind === 'range') {
        const inner: Scope[] = [...scopes, new Map()];
        const decl = node.pipe.decl;
        const v = this.pipeline({ ...node.pipe, decl: [] }, dot, root, inner);
        const entries: Array<[Value, Value]> = Array.isArray(v)
          ? v.map((x, i) => [i, x])
          : isMap(v)
            ? Object.keys(v)
                .sort()
                .map((k) => [k, v[k]])
            : [];
        if (entries.length === 0) out += this.exec(node.otherwise, dot, root, inner);
        for (const [k, x] of entries) {
          const scope: Scope[] = [...scopes, new Map()];
          if (decl.length === 1) scope.at(-1)!.set(decl[0]!, x);
          if (decl.length === 2) {
            scope.at(-1)!.set(decl[0]!, k);
            scope.at(-1)!.set(decl[1]!, x);
          }
          out += this.exec(node.body, x, root, scope);
        }
      }
    }
    return out;
  }

  private pipeline(p: Pipeline, dot: Value, root: RenderContext, scopes: Scope[]): Value {
    let value: Value;
    let first = true;
    for (const cmd of p.commands) {
      value = this.command(cmd, dot, root, scopes, first ? [] : [value]);
      first = false;
    }
    if (p.decl.length) {
      const name = p.decl[0]!;
      if (p.assign) {
        const scope = [...scopes].reverse().find((s) => s.has(name));
        if (!scope) throw new TemplateError(`assignment to undeclared ${name}`);
        scope.set(name, value);
      } else scopes.at(-1)!.set(name, value);
    }
    return value;
  }

  private command(cmd: Operand[], dot: Value, root: RenderContext, scopes: Scope[], piped: Value[]): Value {
    const [head, ...rest] = cmd;
    const args = () => [...rest.map((o) => this.operand(o, dot, root, scopes)), ...piped];
    if (head!.t === 'fn') {
      const fn = this.functions[head!.name];
      if (!fn) throw new TemplateError(`function "${head!.name}" is not supported by this renderer`);
      return fn.call(this, root, ...args());
    }
    const v = this.operand(head!, dot, root, scopes);
    if (typeof v === 'function') return (v as (...a: Value[]) => Value)(...args());
    if (rest.length || piped.length)
      throw new TemplateError('arguments given to a value that is not a function');
    return v;
  }

  private operand(o: Operand, dot: Value, root: RenderContext, scopes: Scope[]): Value {
    if (o.t === 'lit') return o.value;
    if (o.t === 'fn') {
      const fn = this.functions[o.name];
      if (!fn) throw new TemplateError(`function "${o.name}" is not supported by this renderer`);
      return fn.call(this, root);
    }
    let base: Value;
    let path: string[];
    if (o.t === 'sub') {
      base = this.pipeline(o.pipe, dot, root, scopes);
      path = o.path;
    } else {
      path = o.path;
      if (o.base === 'dot') base = dot;
      else if (o.base === 'root') base = root;
      else {
        const scope = [...scopes].reverse().find((s) => s.has(o.name!));
        if (o.name !== '$' && !scope) throw new TemplateError(`undefined variable ${o.name}`);
        base = scope ? scope.get(o.name!) : root;
      }
    }
    let v = base;
    for (const key of path) {
      if (v === undefined || v === null) {
        // Go: a field of a missing map entry is nil ("<no value>" when printed); of nil itself, an error.
        throw new TemplateError(`nil pointer evaluating .${path.join('.')}`);
      }
      v = (v as Record<string, Value>)[key];
    }
    return v;
  }
}

function indent(n: number, s: string): string {
  const pad = ' '.repeat(n);
  return s
    .split('\n')
    .map((l) => pad + l)
    .join('\n');
}
