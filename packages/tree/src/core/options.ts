import { TreeError } from './errors.js'

/** What happens to a message the router cannot classify (neither list wins by the margin). */
export type UnknownRoute = 'mainline' | 'chat' | 'skip'

/** What a checkpoint does with branches still open: close them (the reference's behaviour) or carry them over. */
export type CheckpointBranches = 'close' | 'carry'

/** Options of the memory-tree core (routing, injection budget, retention). */
export interface TreeOptions {
  /** Keywords that mark chit-chat (any language; matched on the store's CJK-aware tokens). */
  chatKeywords: string[]
  /** Keywords that mark project work. */
  projectKeywords: string[]
  /** How far one side's score must lead the other for a confident route. */
  routeMargin: number
  /** Where an unclassified message goes: the mainline turn log, the chat partition, or nowhere. */
  unknownRoute: UnknownRoute
  /** Record constraints and decisions stated in project messages as mainline items. */
  autoExtract: boolean
  /** Recent mainline turns (from earlier sessions) shown in the injected context. */
  recentTurns: number
  /** Token budget of the injected mainline context; constraints are always kept. */
  maxContextTokens: number
  /** Longest stored mainline turn or chat message, in characters (branch logs keep up to 16 000). */
  maxTurnChars: number
  /** Longest mainline item, in characters. */
  maxItemChars: number
  /** Chat messages kept verbatim per workspace before older ones fold into a digest. */
  chatKeep: number
  /** Uncleared mainline turns kept per project; older ones are trimmed. */
  maxStoredTurns: number
  /** Most items one merge appends to the mainline. */
  maxMergeItems: number
  /** Open a branch by itself when a project message starts a side question or a trial (and none is current). */
  autoBranch: boolean
  /** `close`: a checkpoint clears every branch reference of the stage, open ones closed unmerged (logs kept); `carry`: open branches stay open into the next stage. */
  checkpointBranches: CheckpointBranches
}

/**
 * Default chit-chat keywords: English, Chinese, Japanese. Greetings, thanks, weather, small
 * talk. Single CJK characters are avoided because they occur inside unrelated words.
 */
export const DEFAULT_CHAT_KEYWORDS: readonly string[] = Object.freeze([
  // English
  'hi', 'hello', 'hey', 'thanks', 'thank you', 'thx', 'good morning', 'good night', 'good evening',
  'how are you', 'weather', 'lol', 'haha', 'bye', 'goodbye', 'cheers', 'joke', 'weekend', 'lunch',
  'dinner', 'coffee', 'movie', 'music', 'chat', 'bored', 'sunny', 'rain', 'holiday',
  // Chinese
  '你好', '您好', '谢谢', '多谢', '早上好', '晚上好', '晚安', '天气', '哈哈', '再见', '拜拜', '吃饭', '午饭',
  '晚饭', '周末', '电影', '音乐', '闲聊', '聊天', '笑话', '心情', '辛苦了', '下雨', '放假',
  // Japanese
  'こんにちは', 'こんばんは', 'おはよう', 'ありがとう', '天気', 'おやすみ', 'さようなら', '元気', '週末',
  'ランチ', '映画', '音楽', '雑談', '暇', '休み',
])

/** Default project keywords: English, Chinese, Japanese. Engineering and research work. */
export const DEFAULT_PROJECT_KEYWORDS: readonly string[] = Object.freeze([
  // English
  'code', 'bug', 'error', 'fix', 'test', 'build', 'deploy', 'refactor', 'architecture', 'design',
  'api', 'database', 'schema', 'migration', 'function', 'class', 'module', 'repo', 'commit',
  'release', 'performance', 'research', 'spec', 'requirement', 'feature', 'implement', 'config',
  'server', 'client', 'endpoint', 'query', 'typescript', 'python', 'dependency', 'package',
  'pipeline', 'review', 'issue', 'exception', 'crash', 'latency', 'benchmark', 'milestone',
  'constraint', 'decision', 'project', 'service', 'compile', 'debug', 'library', 'framework',
  // Chinese
  '代码', '项目', '调研', '架构', '部署', '测试', '接口', '数据库', '需求', '功能', '实现', '重构', '性能',
  '报错', '错误', '修复', '设计', '方案', '模块', '配置', '服务', '上线', '发布', '依赖', '迁移', '约束',
  '决定', '里程碑', '文档', '编译', '调试',
  // Japanese
  'コード', 'バグ', 'エラー', '修正', 'テスト', 'ビルド', 'デプロイ', '設計', '実装', '仕様', '要件', '調査',
  'アーキテクチャ', 'データベース', 'リファクタ', '性能', '機能', '不具合', '本番', '環境', '設定',
  'プロジェクト', '決定', '制約', 'サービス',
])

/** Defaults of every option. */
export const DEFAULT_TREE_OPTIONS: Readonly<TreeOptions> = Object.freeze({
  chatKeywords: [...DEFAULT_CHAT_KEYWORDS],
  projectKeywords: [...DEFAULT_PROJECT_KEYWORDS],
  routeMargin: 1,
  unknownRoute: 'mainline',
  autoExtract: true,
  recentTurns: 6,
  maxContextTokens: 1500,
  maxTurnChars: 800,
  maxItemChars: 500,
  chatKeep: 20,
  maxStoredTurns: 200,
  maxMergeItems: 8,
  autoBranch: true,
  checkpointBranches: 'close',
})

const INTEGER_RANGES: Record<string, [number, number]> = {
  recentTurns: [0, 50],
  maxContextTokens: [200, 100_000],
  maxTurnChars: [80, 20_000],
  maxItemChars: [40, 4_000],
  chatKeep: [0, 10_000],
  maxStoredTurns: [1, 100_000],
  maxMergeItems: [1, 100],
}

const MAX_KEYWORDS = 500
const MAX_KEYWORD_CHARS = 60

/**
 * Apply defaults and cross-field rules; the result is frozen.
 * @throws TreeError `invalid-config` naming the field.
 */
export function resolveTreeOptions(input: Partial<TreeOptions> = {}): Readonly<TreeOptions> {
  if (input === null || typeof input !== 'object') throw new TreeError('invalid-config', 'memory-tree options must be an object')
  const merged = { ...DEFAULT_TREE_OPTIONS, ...definedOnly(input) }
  const chatKeywords = keywordList(merged.chatKeywords, 'chatKeywords')
  const projectKeywords = keywordList(merged.projectKeywords, 'projectKeywords')
  const projectSet = new Set(projectKeywords.map(keywordKey))
  const both = chatKeywords.filter((keyword) => projectSet.has(keywordKey(keyword)))
  if (both.length > 0) {
    throw new TreeError('invalid-config', `chatKeywords and projectKeywords both contain ${both.map((k) => JSON.stringify(k)).join(', ')}; a keyword can only mark one side`)
  }
  if (typeof merged.routeMargin !== 'number' || !Number.isFinite(merged.routeMargin) || merged.routeMargin <= 0 || merged.routeMargin > 100) {
    throw new TreeError('invalid-config', `routeMargin must be a number in (0, 100], got ${JSON.stringify(merged.routeMargin)}`)
  }
  if (!['mainline', 'chat', 'skip'].includes(merged.unknownRoute)) {
    throw new TreeError('invalid-config', `unknownRoute must be 'mainline', 'chat' or 'skip', got ${JSON.stringify(merged.unknownRoute)}`)
  }
  if (typeof merged.autoExtract !== 'boolean') throw new TreeError('invalid-config', 'autoExtract must be a boolean')
  if (typeof merged.autoBranch !== 'boolean') throw new TreeError('invalid-config', 'autoBranch must be a boolean')
  if (!['close', 'carry'].includes(merged.checkpointBranches)) {
    throw new TreeError('invalid-config', `checkpointBranches must be 'close' or 'carry', got ${JSON.stringify(merged.checkpointBranches)}`)
  }
  for (const [field, [min, max]] of Object.entries(INTEGER_RANGES)) {
    const value = (merged as Record<string, unknown>)[field]
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
      throw new TreeError('invalid-config', `${field} must be an integer in [${min}, ${max}], got ${JSON.stringify(value)}`)
    }
  }
  return Object.freeze({
    ...merged,
    chatKeywords: Object.freeze(chatKeywords) as string[],
    projectKeywords: Object.freeze(projectKeywords) as string[],
  })
}

function definedOnly<T extends object>(input: T): Partial<T> {
  return Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined)) as Partial<T>
}

function keywordKey(keyword: string): string {
  return keyword.normalize('NFKC').toLowerCase().trim()
}

function keywordList(value: unknown, field: string): string[] {
  if (!Array.isArray(value)) throw new TreeError('invalid-config', `${field} must be a list of strings`)
  if (value.length > MAX_KEYWORDS) throw new TreeError('invalid-config', `${field} has ${value.length} entries; at most ${MAX_KEYWORDS}`)
  const out: string[] = []
  const seen = new Set<string>()
  value.forEach((entry, index) => {
    if (typeof entry !== 'string' || entry.trim().length === 0) {
      throw new TreeError('invalid-config', `${field}[${index}] must be a non-empty string, got ${JSON.stringify(entry)}`)
    }
    if (entry.length > MAX_KEYWORD_CHARS) throw new TreeError('invalid-config', `${field}[${index}] is longer than ${MAX_KEYWORD_CHARS} characters`)
    const key = keywordKey(entry)
    if (!seen.has(key)) {
      seen.add(key)
      out.push(entry.trim())
    }
  })
  return out
}
