/**
 * The browser half's stylesheet, injected once when the host materializes the bundle. Colours
 * come from the DSH client's own theme variables (with fallbacks), so light and dark follow
 * the host's theme switch.
 */
const CSS = `
.dshm-dock{box-sizing:border-box;width:calc(100% - 2 * var(--dsh-composer-side-clearance, 16px));max-width:var(--dsh-composer-card-max-width, 780px);margin:0 auto 6px;position:relative;font-size:13px;color:var(--dsw-alias-label-primary, #1f2328)}
.dshm-pill{display:flex;align-items:center;gap:6px;flex-wrap:wrap;border:1px solid var(--dsw-alias-border-l1, #d0d7de);background:var(--dsw-specific-tip, #f6f8fa);border-radius:12px;padding:4px 8px}
.dshm-pill-label{font-weight:600;margin-right:2px}
.dshm-chip{border:1px solid var(--dsw-alias-border-l2, #d0d7de);background:var(--dsw-alias-bg-base, #fff);color:inherit;border-radius:999px;padding:1px 10px;font:inherit;cursor:pointer;line-height:22px}
.dshm-chip:disabled{cursor:default;opacity:.7}
.dshm-chip:hover:not(:disabled){background:var(--dsw-alias-interactive-bg-hover, #eef1f4)}
.dshm-quiet{cursor:default;color:var(--dsw-alias-label-tertiary, #57606a)}
.dshm-menu{position:absolute;bottom:calc(100% + 4px);left:0;z-index:40;min-width:280px;max-width:min(560px,90vw);max-height:50vh;overflow:auto;margin:0;padding:6px;list-style:none;border:1px solid var(--dsw-alias-border-l1, #d0d7de);background:var(--dsw-alias-bg-base, #fff);border-radius:10px;box-shadow:0 8px 24px rgba(0,0,0,.18)}
.dshm-menu-item{display:block;width:100%;text-align:left;border:0;background:none;color:inherit;font:inherit;padding:6px 8px;border-radius:6px;cursor:pointer}
.dshm-menu-item[aria-checked=true]{background:var(--dsw-alias-interactive-bg-hover, #eef1f4)}
.dshm-muted{color:var(--dsw-alias-label-tertiary, #57606a);font-size:12px}
.dshm-kind{display:inline-block;font-size:11px;padding:0 6px;border-radius:6px;background:var(--dsw-alias-interactive-bg-hover, #eef1f4);color:var(--dsw-alias-label-secondary, #424a53);margin-right:4px}
.dshm-error{color:var(--dsw-alias-state-error-primary, #cf222e);font-size:12px}
.dshm-ok{color:var(--dsw-alias-state-business-primary, #1a7f37);font-size:12px}
.dshm-panel{position:fixed;top:0;right:0;bottom:0;z-index:60;width:min(460px,100vw);display:flex;flex-direction:column;background:var(--dsw-alias-bg-base, #fff);color:var(--dsw-alias-label-primary, #1f2328);border-left:1px solid var(--dsw-alias-border-l1, #d0d7de);box-shadow:-8px 0 24px rgba(0,0,0,.16);font-size:13px}
.dshm-panel-head{display:flex;justify-content:space-between;align-items:center;padding:12px 14px;border-bottom:1px solid var(--dsw-alias-border-l1, #d0d7de)}
.dshm-tabs{display:flex;gap:2px;padding:6px 8px;flex-wrap:wrap;border-bottom:1px solid var(--dsw-alias-border-l1, #d0d7de)}
.dshm-tab{border:0;background:none;color:inherit;font:inherit;padding:4px 8px;border-radius:6px;cursor:pointer}
.dshm-tab[aria-selected=true]{background:var(--dsw-alias-interactive-bg-hover, #eef1f4);font-weight:600}
.dshm-panel-body{overflow:auto;padding:10px 14px;flex:1}
.dshm-list{list-style:none;margin:8px 0;padding:0}
.dshm-row{border:1px solid var(--dsw-alias-border-l1, #d0d7de);border-radius:8px;padding:8px 10px;margin-bottom:6px}
.dshm-row-text{margin:0 0 4px;white-space:pre-wrap;word-break:break-word}
.dshm-row-actions{display:flex;gap:10px;flex-wrap:wrap}
.dshm-sources{margin:6px 0 0;padding-left:18px;color:var(--dsw-alias-label-secondary, #424a53)}
.dshm-link{border:0;background:none;padding:0;font:inherit;font-size:12px;color:var(--dsw-alias-state-business-primary, #0969da);cursor:pointer}
.dshm-link:disabled{opacity:.5;cursor:default}
.dshm-danger{color:var(--dsw-alias-state-error-primary, #cf222e)}
.dshm-input{box-sizing:border-box;border:1px solid var(--dsw-alias-border-l2, #d0d7de);background:var(--dsw-alias-bg-base, #fff);color:inherit;border-radius:6px;padding:4px 8px;font:inherit;min-width:0}
.dshm-search,.dshm-edit{width:100%}
.dshm-hints{display:flex;gap:8px;flex-wrap:wrap;align-items:baseline;margin:4px 0}
.dshm-edit{min-height:64px}
.dshm-button{border:1px solid var(--dsw-alias-border-l2, #d0d7de);background:var(--dsw-alias-bg-base, #fff);color:inherit;border-radius:6px;padding:3px 10px;font:inherit;cursor:pointer}
.dshm-button:disabled{opacity:.5;cursor:default}
.dshm-primary{background:var(--dsw-alias-state-business-primary, #1f6feb);border-color:transparent;color:#fff}
.dshm-status{white-space:pre-wrap;font-size:12px;background:var(--dsw-alias-interactive-bg-hover, #f6f8fa);padding:8px;border-radius:6px}
.dshm-card{border:1px solid var(--dsw-alias-border-l1, #d0d7de);border-radius:12px;margin:0 0 10px;color:var(--dsw-alias-label-primary, #1f2328);font-size:13px}
.dshm-card-head{display:flex;flex-direction:column;align-items:flex-start;gap:2px;width:100%;border:0;background:none;color:inherit;font:inherit;text-align:left;padding:14px 16px;cursor:pointer}
.dshm-card-title{font-weight:600;font-size:17px}
.dshm-card-desc{color:var(--dsw-alias-label-tertiary, #57606a);font-size:14px}
.dshm-badge{font-size:11px;padding:0 6px;border-radius:6px;background:var(--dsw-specific-tip, #fff8c5);color:var(--dsw-alias-label-secondary, #424a53)}
.dshm-card-body{padding:4px 16px 14px;border-top:1px solid var(--dsw-alias-border-l1, #d0d7de)}
.dshm-field{display:flex;justify-content:space-between;align-items:center;gap:12px;padding:6px 0}
.dshm-field>label,.dshm-field>span{flex:1;min-width:0}
.dshm-field-control{display:flex;align-items:center;justify-content:flex-end;gap:8px;flex:none}
.dshm-field-control .dshm-input{width:200px}
.dshm-field-meta{display:flex;align-items:center;justify-content:flex-end;gap:6px;width:150px}
.dshm-actions{display:flex;justify-content:flex-end;gap:8px;margin-top:8px}
`

/** Add the stylesheet to the page once (a second materialization finds it and adds nothing). */
export function injectStyles(id: string): void {
  if (typeof document === 'undefined' || document.querySelector(`style[data-plugin-css="${id}"]`)) return
  const tag = document.createElement('style')
  tag.dataset.plugin = id
  tag.dataset.pluginCss = id
  tag.textContent = CSS
  document.head.appendChild(tag)
}
