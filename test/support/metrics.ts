/** Reading Prometheus text, as the injector and Linkerd's proxies serve it on /metrics. */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of one metric in Prometheus text. */
export function samples(text: string, name: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const brace = line.indexOf('{');
    const labels: Record<string, string> = {};
    let rest = line;
    if (brace === name.length) {
      const end = line.lastIndexOf('}');
      for (const m of line.slice(brace + 1, end).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[m[1] ?? ''] = m[2] ?? '';
      rest = line.slice(end + 1);
    } else {
      rest = line.slice(name.length);
    }
    out.push({ name, labels, value: Number(rest.trim().split(/\s+/)[0]) });
  }
  return out;
}

/** Sum of a metric's samples whose labels include all of `labels`. */
export const sum = (text: string, name: string, labels: Record<string, string> = {}): number =>
  samples(text, name)
    .filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((n, s) => n + s.value, 0);
