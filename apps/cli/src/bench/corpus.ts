/**
 * Deterministic synthetic text for the scale benchmark: realistic mixed English, Chinese and
 * Japanese memory sentences and conversation messages from a seeded generator, so every run
 * measures the same data.
 */

/** A seeded PRNG (mulberry32): the same seed gives the same sequence on every machine. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const SUBJECTS = ['the orders service', 'the billing API', 'the search index', 'the mobile app', 'the data pipeline', 'the auth gateway', 'the deploy script', 'the analytics dashboard', 'the payment worker', 'the notification queue', 'the CI runner', 'the metrics exporter']
const TOOLS = ['PostgreSQL', 'Redis', 'Kafka', 'TypeScript', 'Rust', 'Go', 'Python', 'SQLite', 'Terraform', 'Docker', 'Kubernetes', 'GraphQL', 'gRPC', 'React', 'Vue', 'Nginx', 'ClickHouse', 'MinIO', 'Prometheus', 'Grafana']
const VERBS = ['uses', 'migrated to', 'should avoid', 'depends on', 'was rewritten in', 'caches results in', 'logs to', 'is deployed with', 'is tested with', 'stores sessions in']
const PEOPLE = ['Alice', 'Bob', 'Chen Wei', 'Tanaka', 'Priya', 'Marco', 'Sato', 'Li Na', 'Omar', 'Yuki']
const PREFS = ['prefers tabs over spaces', 'likes short commit messages', 'wants tests before merging', 'reviews code in the morning', 'dislikes ORMs', 'prefers dark mode', 'writes docs in Markdown', 'uses vim keybindings', 'drinks green tea', 'works from Osaka on Fridays']
const ZH = ['我们决定使用', '数据库迁移', '订单服务', '缓存失效', '部署流程', '用户偏好', '性能瓶颈', '接口设计', '日志系统', '消息队列', '权限校验', '测试覆盖率', '配置文件', '监控告警', '代码评审']
const ZH_TAIL = ['需要在下周完成。', '已经上线了。', '还有一些问题。', '由陈伟负责。', '要注意兼容性。', '比原来快三倍。']
const JA = ['データベースの移行', 'キャッシュの設定', 'デプロイ手順', 'ユーザー設定', 'エラーメッセージ', '認証サーバー', 'テストの自動化', 'ログの保存先', '検索インデックス', '通知キュー']
const JA_TAIL = ['を来週までに終わらせる。', 'は田中さんが担当する。', 'に問題が見つかった。', 'を見直す必要がある。', 'はもう本番に出ている。']
const FILLER = ['Also', 'By the way', 'For the record', 'Note that', 'Remember that', 'As discussed', 'To be clear', 'Just so you know']
const QUESTIONS = ['how do I configure', 'why does', 'can you check', 'what is the status of', 'please review', 'help me debug']

function pick<T>(random: () => number, list: readonly T[]): T {
  return list[Math.floor(random() * list.length)]!
}

/** One L1-memory-like sentence (about 60 % English, 25 % Chinese-mixed, 15 % Japanese-mixed). */
export function memoryText(random: () => number, index: number): string {
  const roll = random()
  if (roll < 0.35) return `${capital(pick(random, SUBJECTS))} ${pick(random, VERBS)} ${pick(random, TOOLS)} (note ${index}).`
  if (roll < 0.6) return `${pick(random, PEOPLE)} ${pick(random, PREFS)}; ${pick(random, SUBJECTS)} ${pick(random, VERBS)} ${pick(random, TOOLS)}.`
  if (roll < 0.85) return `${pick(random, ZH)}${pick(random, TOOLS)}，${pick(random, ZH)}${pick(random, ZH_TAIL)} (#${index})`
  return `${pick(random, JA)}${pick(random, JA_TAIL)}${pick(random, TOOLS)} を使う。`
}

/** One conversation-message-like text of 1-4 sentences, user or assistant flavoured. */
export function messageText(random: () => number, role: 'user' | 'assistant', index: number): string {
  const sentences: string[] = []
  const count = 1 + Math.floor(random() * 4)
  if (role === 'user') sentences.push(`${capital(pick(random, QUESTIONS))} ${pick(random, SUBJECTS)} with ${pick(random, TOOLS)}?`)
  for (let i = 0; i < count; i++) {
    const roll = random()
    if (roll < 0.55) sentences.push(`${pick(random, FILLER)}, ${pick(random, SUBJECTS)} ${pick(random, VERBS)} ${pick(random, TOOLS)} and ${pick(random, PEOPLE)} ${pick(random, PREFS)}.`)
    else if (roll < 0.8) sentences.push(`${pick(random, ZH)}${pick(random, TOOLS)}${pick(random, ZH_TAIL)}`)
    else sentences.push(`${pick(random, JA)}${pick(random, JA_TAIL)}`)
  }
  sentences.push(`(ref ${index})`)
  return sentences.join(' ')
}

/** Queries a user might type, mixed languages, each matching some generated text. */
export const BENCH_QUERIES: readonly string[] = [
  'Which database does the orders service use?',
  'what did we decide about Redis caching',
  'Kafka notification queue',
  '数据库迁移 PostgreSQL 的进度',
  '订单服务的缓存失效问题',
  'デプロイ手順 Kubernetes',
  'キャッシュの設定を見直す',
  'does Tanaka prefer tabs over spaces?',
  'how is the auth gateway deployed',
  'Grafana metrics exporter dashboard',
  '监控告警 Prometheus',
  'payment worker migrated to Rust',
  'テストの自動化 Python',
  'search index ClickHouse',
  'Chen Wei 代码评审',
  'deploy script Terraform Docker',
]

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1)
}
