/**
 * The few React APIs the browser half calls. React is supplied by the DSH web client at run
 * time (its module loader answers `require('react')` and `require('react/jsx-runtime')`); the
 * package ships no React and depends on no React types, so these declarations state exactly
 * what is used and nothing more.
 */
declare module 'react' {
  export type SetState<T> = (value: T | ((previous: T) => T)) => void
  export function useState<T>(initial: T | (() => T)): [T, SetState<T>]
  export function useEffect(effect: () => void | (() => void), deps?: readonly unknown[]): void
  export function useCallback<T extends (...args: never[]) => unknown>(callback: T, deps: readonly unknown[]): T
  export function useSyncExternalStore<T>(subscribe: (listener: () => void) => () => void, getSnapshot: () => T): T
}

declare module 'react/jsx-runtime' {
  export namespace JSX {
    type Element = unknown
    interface IntrinsicElements {
      [name: string]: any
    }
    interface ElementChildrenAttribute {
      children: unknown
    }
    interface IntrinsicAttributes {
      key?: string | number
    }
  }
  export function jsx(type: unknown, props: unknown, key?: unknown): unknown
  export function jsxs(type: unknown, props: unknown, key?: unknown): unknown
  export const Fragment: unknown
}
