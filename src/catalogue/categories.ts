export const CATEGORIES = ['support', 'ops', 'sales', 'legal', 'content', 'research', 'data', 'dev'] as const;
export type Category = (typeof CATEGORIES)[number];

export function isCategory(value: string): value is Category {
  return (CATEGORIES as readonly string[]).includes(value);
}
