/**
 * The nat-table rules linkerd-init writes, computed from the container's arguments alone.
 *
 * proxy-init (github.com/linkerd/linkerd2-proxy-init) parses its flags with cobra/pflag, then runs one iptables
 * command per rule: the PROXY_INIT_REDIRECT chain for inbound traffic (ignored ports, ignored source subnets, the
 * redirect) hooked from PREROUTING, then the PROXY_INIT_OUTPUT chain for outbound traffic (the proxy's uid and gid,
 * loopback, ignored ports, the redirect) hooked from OUTPUT; the same again with ip6tables unless `--ipv6=false`.
 * The plan is what `iptables-save -t nat` prints afterwards in a namespace that had no nat rules before, so it can be
 * compared line by line with a real run (and `iptables-restore` can apply it, wrapped in `*nat` ... `COMMIT`).
 */
import { EngineError } from './errors.js';
import { pushAll, type Container } from './k8s.js';
import { INIT_CONTAINER } from './names.js';
import { parseCidr, parseGoBool, parseGoInt, parsePortRange, trimGoSpace, type Cidr, type PortRange } from './parsers.js';
import { clip } from './text.js';

/**
 * The nat table after linkerd-init ran: the chain lines, then the `-A` lines, as `iptables-save -t nat` prints them
 * without `-c`. Chain lines carry the `[0:0]` counters a namespace shows before any packet went through it; rule lines
 * have no counters. Neither the `*nat`/`COMMIT` framing nor the `#` comment lines are included.
 */
export interface IptablesPlan {
  ipv4: string[];
  /** Empty when linkerd-init leaves ip6tables alone (`--ipv6=false`). */
  ipv6: string[];
}

const REDIRECT_CHAIN = 'PROXY_INIT_REDIRECT';
const OUTPUT_CHAIN = 'PROXY_INIT_OUTPUT';
/** iptables' multiport match takes at most 15 ports, a range counting as two. */
const MULTIPORT_LIMIT = 15;
/** The owner match refuses (uint32)-1, which the kernel reserves for "no id". */
const MAX_OWNER_ID = 4294967294;

type FlagKind = 'int' | 'ints' | 'strings' | 'string' | 'bool';

/**
 * proxy-init's flags: long name, kind, one-letter shorthand, and the option it sets. Flags without an option do not
 * change the rules but are still read, so that a value proxy-init would refuse is refused here too.
 */
const FLAGS: ReadonlyMap<string, { kind: FlagKind; short?: string; option?: keyof InitOptions }> = new Map([
  ['incoming-proxy-port', { kind: 'int', short: 'p', option: 'inboundPort' }],
  ['outgoing-proxy-port', { kind: 'int', short: 'o', option: 'outboundPort' }],
  ['proxy-uid', { kind: 'int', short: 'u', option: 'uid' }],
  ['proxy-gid', { kind: 'int', short: 'g', option: 'gid' }],
  ['ports-to-redirect', { kind: 'ints', short: 'r', option: 'portsToRedirect' }],
  ['inbound-ports-to-ignore', { kind: 'strings', option: 'inboundPortsToIgnore' }],
  ['outbound-ports-to-ignore', { kind: 'strings', option: 'outboundPortsToIgnore' }],
  ['subnets-to-ignore', { kind: 'strings', option: 'subnetsToIgnore' }],
  ['simulate', { kind: 'bool', option: 'simulate' }],
  ['netns', { kind: 'string' }],
  ['use-wait-flag', { kind: 'bool', short: 'w' }],
  ['timeout-close-wait-secs', { kind: 'int' }],
  ['log-format', { kind: 'string' }],
  ['log-level', { kind: 'string', option: 'logLevel' }],
  ['iptables-mode', { kind: 'string', option: 'iptablesMode' }],
  ['ipv6', { kind: 'bool', option: 'ipv6' }],
  ['firewall-bin-path', { kind: 'string', option: 'firewallBinPath' }],
  ['firewall-save-bin-path', { kind: 'string' }],
  ['help', { kind: 'bool', short: 'h', option: 'help' }],
] as const);

const SHORT_FLAGS: ReadonlyMap<string, string> = new Map(
  [...FLAGS].flatMap(([name, f]) => (f.short ? [[f.short, name] as const] : [])),
);

/** The settings proxy-init's rules depend on, with proxy-init's defaults. */
interface InitOptions {
  inboundPort: number;
  outboundPort: number;
  uid: number;
  gid: number;
  /** Empty: redirect every inbound port. */
  portsToRedirect: number[];
  inboundPortsToIgnore: string[];
  outboundPortsToIgnore: string[];
  subnetsToIgnore: string[];
  simulate: boolean;
  ipv6: boolean;
  help: boolean;
  iptablesMode: string;
  firewallBinPath: string;
  logLevel: string;
}

const LOG_LEVELS = new Set(['panic', 'fatal', 'error', 'warn', 'warning', 'info', 'debug', 'trace']);

/**
 * The nat rules linkerd-init installs, from the rendered `linkerd-init` container. Throws an EngineError when the
 * container is not linkerd-init, when proxy-init would refuse its arguments, or when one of its iptables commands
 * would fail (an IPv6 subnet given to iptables, a uid the owner match refuses, ...): the init container would then
 * exit with an error and the pod would never start.
 */
export function iptablesPlan(init: Container): IptablesPlan {
  if (init.name !== INIT_CONTAINER) {
    throw invalid(`expected the ${INIT_CONTAINER} container, got ${init.name === undefined ? 'a container without a name' : JSON.stringify(init.name)}`);
  }
  const options = parseArgs(init.args);
  validate(options);
  if (options.help || options.simulate) return { ipv4: [], ipv6: [] };
  return {
    ipv4: tableRules(options),
    // The same rules: with ip6tables on, validate() has refused any subnet, the one thing that could differ.
    ipv6: options.ipv6 ? tableRules(options) : [],
  };
}

function invalid(message: string): EngineError {
  return new EngineError('INVALID_CONFIGURATION', `${INIT_CONTAINER}: ${message}`);
}

// ---------------------------------------------------------------------------------------------------------------
// Arguments, as pflag reads them

function parseArgs(args: unknown): InitOptions {
  if (args !== undefined && (!Array.isArray(args) || !args.every((a) => typeof a === 'string'))) {
    throw invalid('args must be a list of strings');
  }
  const options: InitOptions = {
    inboundPort: -1,
    outboundPort: -1,
    uid: -1,
    gid: -1,
    portsToRedirect: [],
    inboundPortsToIgnore: [],
    outboundPortsToIgnore: [],
    subnetsToIgnore: [],
    simulate: false,
    ipv6: true,
    help: false,
    iptablesMode: '',
    firewallBinPath: '',
    logLevel: 'info',
  };
  const seen = new Set<string>();
  const list = (args ?? []) as string[];
  for (let i = 0; i < list.length; i++) {
    const arg = list[i] as string;
    if (arg === '--') break;
    // Anything else not starting with '-' is a positional argument, which proxy-init accepts and ignores.
    if (!arg.startsWith('-') || arg === '-') continue;
    const takeNext = (flag: string): string => {
      if (i + 1 >= list.length) throw invalid(`flag needs an argument: ${flag}`);
      i++;
      return list[i] as string;
    };
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      const flag = FLAGS.get(name);
      if (!flag) throw invalid(`unknown flag: --${name}`);
      const value = eq >= 0 ? arg.slice(eq + 1) : flag.kind === 'bool' ? 'true' : takeNext(`--${name}`);
      set(options, seen, name, value);
      continue;
    }
    // Shorthands: "-p 4143", "-p=4143", "-p4143", and bool letters grouped before them ("-wp4143").
    for (let j = 1; j < arg.length; j++) {
      const letter = arg[j] as string;
      const name = SHORT_FLAGS.get(letter);
      if (!name) throw invalid(`unknown shorthand flag: '${letter}' in ${arg}`);
      const kind = (FLAGS.get(name) as { kind: FlagKind }).kind;
      const rest = arg.slice(j + 1);
      if (kind === 'bool') {
        if (rest.startsWith('=')) {
          set(options, seen, name, rest.slice(1));
          break;
        }
        set(options, seen, name, 'true');
        continue;
      }
      const value = rest === '' ? takeNext(`-${letter}`) : rest.startsWith('=') ? rest.slice(1) : rest;
      set(options, seen, name, value);
      break;
    }
  }
  return options;
}

function set(options: InitOptions, seen: Set<string>, name: string, value: string): void {
  const flag = FLAGS.get(name) as { kind: FlagKind; option?: keyof InitOptions };
  const bad = (why: string): EngineError => invalid(`invalid argument ${JSON.stringify(value)} for --${name}: ${why}`);
  const int = (text: string, why: string): number => {
    // pflag's int flags also read 0x/0o/0b prefixes; Linkerd renders plain decimal, so only that is accepted.
    const n = parseGoInt(text, 64);
    if (n === undefined) throw bad(why);
    return n;
  };
  let parsed: number | boolean | string | Array<number | string>;
  switch (flag.kind) {
    case 'int':
      parsed = int(value, 'not a decimal integer');
      break;
    case 'ints':
      // strconv.Atoi on each comma-separated item; any failure fails the whole flag.
      parsed = value.split(',').map((item) => int(item, `${JSON.stringify(item)} is not an integer`));
      break;
    case 'strings':
      parsed = csvRecord(value, bad);
      break;
    case 'bool': {
      const b = parseGoBool(value);
      if (b === undefined) throw bad('not a boolean');
      parsed = b;
      break;
    }
    case 'string':
      parsed = value;
      break;
  }
  if (!flag.option) return;
  const target = options as unknown as Record<string, unknown>;
  // pflag replaces a list flag's default on its first use and appends on later ones.
  const current = target[flag.option];
  target[flag.option] = Array.isArray(parsed) && seen.has(name) ? [...(current as unknown[]), ...parsed] : parsed;
  seen.add(name);
}

/**
 * A string-list flag value as pflag reads it: the first record of a CSV text (blank lines before it skipped, a line
 * break or a final carriage return ending it), cut at commas, items not trimmed. Quoted items are refused rather than
 * guessed at; Linkerd renders none.
 */
function csvRecord(value: string, bad: (why: string) => EngineError): string[] {
  const items = listItems(value);
  if (typeof items === 'string') throw bad(items);
  return items;
}

/** `csvRecord`'s items, or why pflag refuses the value. */
function listItems(value: string): string[] | string {
  if (value === '') return [];
  if (value.includes('"')) return 'quotes are not supported in a list';
  for (const line of value.split('\n')) {
    const record = line.endsWith('\r') ? line.slice(0, -1) : line;
    if (record !== '') return record.split(',');
  }
  return 'EOF (every line of it is blank)';
}

// ---------------------------------------------------------------------------------------------------------------
// The checks proxy-init makes before touching iptables, and those iptables makes on each rule

function validate(o: InitOptions): void {
  if (o.help) return;
  if (!LOG_LEVELS.has(o.logLevel.toLowerCase())) throw invalid(`not a valid log level: ${JSON.stringify(o.logLevel)}`);
  const modes = ['legacy', 'nft', 'plain'];
  if (o.iptablesMode !== '' && !modes.includes(o.iptablesMode)) {
    throw invalid(`--iptables-mode must be "legacy", "nft" or "plain", not ${JSON.stringify(o.iptablesMode)}`);
  }
  if (o.iptablesMode === '' && !['', 'iptables-legacy', 'iptables-nft', 'iptables'].includes(o.firewallBinPath)) {
    throw invalid(
      `--firewall-bin-path must be "iptables-legacy", "iptables-nft" or "iptables", not ${JSON.stringify(o.firewallBinPath)}`,
    );
  }
  if (!isPort(o.inboundPort)) throw invalid('--incoming-proxy-port must be a valid TCP port number');
  if (!isPort(o.outboundPort)) throw invalid('--outgoing-proxy-port must be a valid TCP port number');
  const subnets = subnetItemsRefusal(o.subnetsToIgnore, o.ipv6);
  if (subnets !== undefined) throw invalid(`${subnets}, so linkerd-init would fail`);
  // Checks iptables itself makes; a failing command stops proxy-init half-way, so the plan refuses them up front.
  for (const port of o.portsToRedirect) {
    if (!isPort(port)) throw invalid(`iptables would refuse --ports-to-redirect port ${port}`);
  }
  if (o.uid > MAX_OWNER_ID) throw invalid(`iptables would refuse --proxy-uid ${o.uid} (at most ${MAX_OWNER_ID})`);
  if (o.gid > MAX_OWNER_ID) throw invalid(`iptables would refuse --proxy-gid ${o.gid} (at most ${MAX_OWNER_ID})`);
  for (const [flag, list] of [
    ['--inbound-ports-to-ignore', o.inboundPortsToIgnore],
    ['--outbound-ports-to-ignore', o.outboundPortsToIgnore],
  ] as const) {
    const refused = portItemsRefusal(flag, list);
    if (refused !== undefined) throw invalid(refused);
  }
}

/** A list or item as a reason quotes it: its start only, since start-up risks carry reasons into Events. */
const shown = (text: string): string => clip(text, 63);

const isPort = (n: number): boolean => Number.isInteger(n) && n >= 0 && n <= 65535;

/**
 * Why linkerd-init would stop on this value of a port-list flag (`--outbound-ports-to-ignore`, as rendered), or
 * undefined: pflag refuses it, or none of its items is a port proxy-init reads.
 */
export function portListRefusal(flag: string, value: string): string | undefined {
  const items = listItems(value);
  if (typeof items === 'string') return `invalid argument ${JSON.stringify(value)} for ${flag}: ${items}`;
  return portItemsRefusal(flag, items);
}

function portItemsRefusal(flag: string, list: readonly string[]): string | undefined {
  // proxy-init drops items it cannot read, but with none left it still writes a rule with no ports, which fails.
  if (list.length > 0 && multiportGroups(list).some((g) => g.length === 0)) {
    return `${flag} ${JSON.stringify(shown(list.join(',')))} has no valid port, and iptables refuses an empty port list`;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Rules

function tableRules(o: InitOptions): string[] {
  const comment = (text: string): string => `-m comment --comment ${quote(`proxy-init/${text}`)}`;
  const ignorePorts = (chain: string, list: readonly string[]): string[] =>
    multiportGroups(list).map((group) => {
      const ports = group.join(',');
      return `-A ${chain} -p tcp -m multiport --dports ${ports} ${comment(`ignore-port-${ports}`)} -j RETURN`;
    });

  const redirect: string[] = [...ignorePorts(REDIRECT_CHAIN, o.inboundPortsToIgnore)];
  for (const raw of o.subnetsToIgnore) {
    const subnet = trimGoSpace(raw);
    redirect.push(`-A ${REDIRECT_CHAIN}${sourceMatch(subnet)} ${comment(`ignore-subnet-${subnet}`)} -j RETURN`);
  }
  if (o.portsToRedirect.length === 0) {
    redirect.push(
      `-A ${REDIRECT_CHAIN} -p tcp ${comment('redirect-all-incoming-to-proxy-port')} -j REDIRECT --to-ports ${o.inboundPort}`,
    );
  } else {
    for (const port of o.portsToRedirect) {
      redirect.push(
        `-A ${REDIRECT_CHAIN} -p tcp -m tcp --dport ${port} ${comment(`redirect-port-${port}-to-proxy-port`)} -j REDIRECT --to-ports ${o.inboundPort}`,
      );
    }
  }

  const output: string[] = [];
  // proxy-init skips the owner rules for ids <= 0: traffic from root is redirected like any other.
  if (o.uid > 0) output.push(`-A ${OUTPUT_CHAIN} -m owner --uid-owner ${o.uid} ${comment('ignore-proxy-user-id')} -j RETURN`);
  if (o.gid > 0) output.push(`-A ${OUTPUT_CHAIN} -m owner --gid-owner ${o.gid} ${comment('ignore-proxy-group-id')} -j RETURN`);
  output.push(`-A ${OUTPUT_CHAIN} -o lo ${comment('ignore-loopback')} -j RETURN`);
  pushAll(output, ignorePorts(OUTPUT_CHAIN, o.outboundPortsToIgnore));
  output.push(
    `-A ${OUTPUT_CHAIN} -p tcp ${comment('redirect-all-outgoing-to-proxy-port')} -j REDIRECT --to-ports ${o.outboundPort}`,
  );

  // iptables-save lists the built-in chains in hook order, then user chains by name, then each chain's rules.
  return [
    ':PREROUTING ACCEPT [0:0]',
    ':INPUT ACCEPT [0:0]',
    ':OUTPUT ACCEPT [0:0]',
    ':POSTROUTING ACCEPT [0:0]',
    `:${OUTPUT_CHAIN} - [0:0]`,
    `:${REDIRECT_CHAIN} - [0:0]`,
    `-A PREROUTING ${comment('install-proxy-init-prerouting')} -j ${REDIRECT_CHAIN}`,
    `-A OUTPUT ${comment('install-proxy-init-output')} -j ${OUTPUT_CHAIN}`,
    ...output,
    ...redirect,
  ];
}

/**
 * iptables-save always double-quotes a comment. It would also escape `"` and `\`, but a proxy-init comment holds
 * only its fixed texts, port numbers and a valid CIDR, none of which can contain them.
 */
function quote(text: string): string {
  return `"${text}"`;
}

/**
 * Ports and ranges in multiport rules of at most 15 port references, as proxy-init groups them: items in order,
 * a range `lo-hi` becoming `lo:hi` (two references), `n-n` becoming `n`; unreadable items dropped.
 */
function multiportGroups(list: readonly string[]): string[][] {
  if (list.length === 0) return [];
  const groups: string[][] = [];
  let group: string[] = [];
  let count = 0;
  for (const item of list) {
    const range: PortRange | undefined = parsePortRange(item);
    if (!range) continue;
    const refs = range.lo === range.hi ? 1 : 2;
    if (count + refs > MULTIPORT_LIMIT) {
      groups.push(group);
      group = [];
      count = 0;
    }
    group.push(range.lo === range.hi ? String(range.lo) : `${range.lo}:${range.hi}`);
    count += refs;
  }
  // proxy-init keeps the last group even when empty (no readable item at all); validate() refuses that case.
  groups.push(group);
  return groups;
}

// ---------------------------------------------------------------------------------------------------------------
// Subnets

/**
 * Why linkerd-init would stop on this `--subnets-to-ignore` value, or undefined: pflag refuses it, or proxy-init
 * refuses an item that is not a CIDR once trimmed; then, when `ipv6` says whether ip6tables runs too, iptables or
 * ip6tables refuses a subnet's rule.
 */
export function subnetsRefusal(value: string, ipv6?: boolean): string | undefined {
  const items = listItems(value);
  if (typeof items === 'string') return `invalid argument ${JSON.stringify(value)} for --subnets-to-ignore: ${items}`;
  return subnetItemsRefusal(items, ipv6);
}

function subnetItemsRefusal(items: readonly string[], ipv6?: boolean): string | undefined {
  const subnets: Array<{ subnet: string; cidr: Cidr }> = [];
  for (const item of items) {
    const subnet = trimGoSpace(item);
    const cidr = parseCidr(subnet);
    if (!cidr) return `${shown(subnet)} is not a valid CIDR address`;
    subnets.push({ subnet, cidr });
  }
  if (ipv6 === undefined) return undefined;
  // iptables runs every rule first, then ip6tables, each refusing the other family's addresses.
  for (const family of ipv6 ? ([4, 6] as const) : ([4] as const)) {
    for (const { subnet, cidr } of subnets) {
      if (cidr.family !== family) {
        const tool = family === 4 ? 'iptables' : 'ip6tables';
        return (
          `${tool} refuses the IPv${cidr.family} subnet ${shown(subnet)} from --subnets-to-ignore` +
          (family === 6 ? ' (proxy-init gives every subnet to both iptables and ip6tables unless --ipv6=false)' : '')
        );
      }
      if (iptablesPrefix(cidr) === undefined) {
        return (
          `iptables reads the prefix length of ${shown(subnet)} from --subnets-to-ignore as octal (it starts with 0) ` +
          'and refuses it'
        );
      }
    }
  }
  return undefined;
}

/**
 * A prefix length as iptables reads it, with C's strtoul in base 0: a leading 0 makes it octal, so "010" is 8 and "08"
 * is refused, where Go reads both in decimal (an octal reading is the smaller, so it stays in range). Undefined when
 * iptables refuses it.
 */
function iptablesPrefix(cidr: Cidr): number | undefined {
  const { prefix } = cidr;
  if (prefix.length === 1 || !prefix.startsWith('0')) return cidr.bits;
  return /^[0-7]+$/.test(prefix) ? parseInt(prefix, 8) : undefined;
}

/**
 * `-s NETWORK/BITS` as iptables-save prints it (the address masked to its prefix as iptables reads it), or nothing for
 * a /0. Only IPv4 subnets get here: `validate` refuses the rest.
 */
function sourceMatch(subnet: string): string {
  const cidr = parseCidr(subnet) as Cidr;
  const bits = iptablesPrefix(cidr) as number;
  if (bits === 0) return '';
  const masked = cidr.bytes.map((b, i) => {
    const keep = Math.max(0, Math.min(8, bits - i * 8));
    return b & ((0xff << (8 - keep)) & 0xff);
  });
  return ` -s ${masked.join('.')}/${bits}`;
}
