// The light / dark / system theme preference (remembered per browser) and the theme it resolves to.

const THEME = 'faros.theme';

/** The stored preference: 'system' | 'light' | 'dark'. */
export function themePreference() {
  return localStorage.getItem(THEME) || 'system';
}

/** Stores the preference and applies it. */
export function setThemePreference(pref) {
  localStorage.setItem(THEME, pref);
  applyTheme();
}

/** 'light' | 'dark': the preference, or the system's when it is 'system'. */
export function resolvedTheme() {
  const pref = themePreference();
  if (pref === 'light' || pref === 'dark') return pref;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

export function applyTheme() {
  document.documentElement.dataset.theme = resolvedTheme();
}
