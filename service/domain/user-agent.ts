// A User-Agent header in words for the active-sessions page and `sessions list`: the browser and
// the operating system, from a short table of the common ones. Order matters: Edge and Opera say
// "Chrome" too, Chrome says "Safari", Android says "Linux", iOS says "like Mac OS X".
export interface ParsedUserAgent {
  browser: string;
  os: string;
}

const BROWSERS: ReadonlyArray<[RegExp, string]> = [
  [/\bEdg(?:e|A|iOS)?\/(\d+)/, 'Edge'],
  [/\b(?:OPR|Opera)\/(\d+)/, 'Opera'],
  [/\bSamsungBrowser\/(\d+)/, 'Samsung Internet'],
  [/\b(?:Firefox|FxiOS)\/(\d+)/, 'Firefox'],
  [/\b(?:HeadlessChrome)\/(\d+)/, 'Headless Chrome'],
  [/\b(?:Chrome|CriOS)\/(\d+)/, 'Chrome'],
  [/\bVersion\/(\d+)(?:\.\d+)*.*\bSafari\//, 'Safari'],
  [/\bcurl\/(\d+)/, 'curl'],
];

const SYSTEMS: ReadonlyArray<[RegExp, string]> = [
  [/\b(?:iPhone|iPad|iPod)\b.*\bOS (\d+)/, 'iOS'],
  [/\bAndroid (\d+)/, 'Android'],
  [/\bCrOS\b/, 'ChromeOS'],
  [/\bWindows NT 10\.0\b/, 'Windows 10/11'],
  [/\bWindows\b/, 'Windows'],
  [/\bMac OS X (\d+)[._](\d+)/, 'macOS'],
  [/\bMacintosh\b/, 'macOS'],
  [/\bLinux\b/, 'Linux'],
];

/** "Firefox 133" / "Windows 10/11"; "Unknown browser" / "Unknown OS" when nothing matches. */
export function parseUserAgent(header: string | null | undefined): ParsedUserAgent {
  const ua = header ?? '';
  let browser = 'Unknown browser';
  for (const [pattern, name] of BROWSERS) {
    const m = pattern.exec(ua);
    if (m) {
      browser = m[1] ? `${name} ${m[1]}` : name;
      break;
    }
  }
  let os = 'Unknown OS';
  for (const [pattern, name] of SYSTEMS) {
    const m = pattern.exec(ua);
    if (m) {
      os = name === 'macOS' && m[1] ? `macOS ${m[1]}.${m[2]}` : m[1] && name !== 'macOS' ? `${name} ${m[1]}` : name;
      break;
    }
  }
  return { browser, os };
}
