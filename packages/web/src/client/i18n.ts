/**
 * English and Chinese strings of the browser half. The language follows the DSH client's
 * (`<html lang>`, which its locale plugin sets), else the browser's.
 */
const EN = {
  memory: 'Memory',
  mode: 'Mode',
  'mode.auto': 'auto',
  'mode.chat': 'chat',
  'mode.work': 'work',
  'mode.off': 'off',
  'mode.hint.auto': 'decides per turn',
  'mode.hint.chat': 'personal memory only',
  'mode.hint.work': 'project memory only',
  'mode.hint.off': 'no recall, no capture of new memories',
  writeOnly: 'write-only',
  'writeOnly.hint': 'keep recording, inject nothing',
  default: 'default',
  recalled: 'recalled',
  recalledNone: 'nothing recalled yet',
  distillRunning: 'distilling…',
  distillPending: 'pending',
  openPanel: 'Open memory panel',
  close: 'Close',
  global: 'Global',
  workspace: 'This workspace',
  session: 'This session',
  layers: 'Layers',
  palaceTree: 'Palace & tree',
  search: 'Search memories (中文 / 日本語 too)',
  empty: 'No memories here.',
  didYouMean: 'Did you mean:',
  completions: 'Complete with',
  sources: 'Source turns',
  noSources: 'No source turns recorded.',
  edit: 'Correct',
  save: 'Save',
  cancel: 'Cancel',
  forget: 'Forget',
  confirmForget: 'Forget this memory for good?',
  promote: 'Promote to global',
  enable: 'Enable',
  refresh: 'Refresh',
  disable: 'Disable',
  layerHelp: 'Explicit layers put a snapshot of the whole layer into this session instead of per-turn recall.',
  status: 'Status',
  palace: 'Memory palace',
  memoryName: 'This session archives under',
  archived: 'turns archived',
  notArchived: 'nothing archived yet',
  nameSession: 'Give this session a memory name',
  noPalace: 'No archive for this workspace yet.',
  turns: 'turns',
  tree: 'Memory tree',
  noTree: 'No project tree for this workspace.',
  mainline: 'Mainline',
  branches: 'Open branches',
  none: 'none',
  saveAll: 'Save',
  discard: 'Discard',
  reset: 'Reset to default',
  overridden: 'changed',
  unsaved: 'unsaved changes',
  saved: 'Saved. Applies from the next turn.',
  conflict: 'Changed elsewhere meanwhile; the card now shows the current value. Check and save again.',
  secretPlaceholder: 'write-only: type to replace, blank keeps the stored key',
  notWritable: 'This browser cannot change settings (only loopback browsers can).',
  loading: 'Loading…',
  unavailable: 'This namespace is not served by the host.',
  invalidNumber: 'expects a whole number',
  sessionNotLive: 'Open this session (send a message) to change its layers.',
} as const

/** A message key. */
export type Key = keyof typeof EN

const ZH: Record<Key, string> = {
  memory: '记忆',
  mode: '模式',
  'mode.auto': '自动',
  'mode.chat': '闲聊',
  'mode.work': '工作',
  'mode.off': '关闭',
  'mode.hint.auto': '每轮自动判断',
  'mode.hint.chat': '只用个人记忆',
  'mode.hint.work': '只用项目记忆',
  'mode.hint.off': '不召回，也不记录新记忆',
  writeOnly: '只写入',
  'writeOnly.hint': '继续记录，但不注入',
  default: '默认',
  recalled: '条已召回',
  recalledNone: '尚未召回',
  distillRunning: '提炼中…',
  distillPending: '待提炼',
  openPanel: '打开记忆面板',
  close: '关闭',
  global: '全局',
  workspace: '本工作区',
  session: '本会话',
  layers: '显式层',
  palaceTree: '记忆宫殿与记忆树',
  search: '搜索记忆（支持中文、日本語）',
  empty: '这里还没有记忆。',
  didYouMean: '您是不是要找：',
  completions: '补全为',
  sources: '来源对话',
  noSources: '没有记录来源对话。',
  edit: '更正',
  save: '保存',
  cancel: '取消',
  forget: '遗忘',
  confirmForget: '永久遗忘这条记忆？',
  promote: '提升为全局',
  enable: '启用',
  refresh: '刷新',
  disable: '停用',
  layerHelp: '显式层把整层记忆的快照放进本会话，取代逐轮召回。',
  status: '状态',
  palace: '记忆宫殿',
  memoryName: '本会话的记忆名',
  archived: '已有归档',
  notArchived: '尚无归档',
  nameSession: '给本会话起一个记忆名',
  noPalace: '本工作区还没有归档。',
  turns: '轮',
  tree: '记忆树',
  noTree: '本工作区没有项目树。',
  mainline: '主线',
  branches: '未合并的分支',
  none: '无',
  saveAll: '保存',
  discard: '放弃修改',
  reset: '恢复默认',
  overridden: '已修改',
  unsaved: '有未保存的修改',
  saved: '已保存，下一轮生效。',
  conflict: '其他地方刚修改过，卡片已显示最新值，请检查后再保存。',
  secretPlaceholder: '只写：输入即替换，留空则保留已存的密钥',
  notWritable: '此浏览器不能修改设置（仅限本机浏览器）。',
  loading: '加载中…',
  unavailable: '宿主没有提供此命名空间。',
  invalidNumber: '需要整数',
  sessionNotLive: '先打开此会话（发送一条消息）再切换显式层。',
}

/** The current UI language. */
export function lang(): 'en' | 'zh' {
  const tag = (typeof document !== 'undefined' && document.documentElement.lang) || (typeof navigator !== 'undefined' ? navigator.language : '') || 'en'
  return tag.toLowerCase().startsWith('zh') ? 'zh' : 'en'
}

/** Translate a key into the current language. */
export function t(key: Key): string {
  return lang() === 'zh' ? ZH[key] : EN[key]
}

/** A text given in both languages (card titles, field labels). */
export interface Bilingual {
  readonly en: string
  readonly zh: string
}

/** Pick the current language's text. */
export function pick(text: Bilingual): string {
  return text[lang()]
}
