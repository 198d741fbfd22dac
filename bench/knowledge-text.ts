/**
 * Plausible knowledge-base text and questions in the six scripts of the seed data (Latin, Devanagari, Bengali,
 * Tamil, Chinese, Arabic), generated deterministically from a random seed: customer-service passages (opening
 * hours, warranties, returns, delivery, instalments…) built from sentence templates, products, cities, days and
 * the seed's names of the same script. The vocabulary is small next to real documents, so common tokens occur
 * in a large share of the passages: harder for retrieval than real text, not easier.
 */
import { NAMES, randomGenerator } from '../scripts/seed';

export const SCRIPTS = ['latin', 'devanagari', 'bengali', 'tamil', 'chinese', 'arabic'] as const;
export type Script = (typeof SCRIPTS)[number];

interface Language {
  products: string[];
  cities: string[];
  days: string[];
  names: string[];
  /** Sentences of passages; slots {product} {city} {day} {day2} {name} {n} {m}. */
  sentences: string[];
  /** Questions a visitor would ask, with the same slots. */
  questions: string[];
  /** How sentences are joined (no space in Chinese). */
  joiner: string;
}

const namesOf = (...scripts: string[]) =>
  NAMES.filter(({ script }) => scripts.includes(script)).flatMap(({ first, last, script }) =>
    first.flatMap((given) => last.map((family) => (script === 'cjk' ? `${family}${given}` : `${given} ${family}`))),
  );

const LANGUAGES: Record<Script, Language> = {
  latin: {
    products: ['laptop', 'phone', 'printer', 'router', 'headphones', 'camera', 'tablet', 'monitor', 'keyboard', 'charger', 'smartwatch', 'refrigerator', 'microwave', 'washing machine', 'air conditioner', 'television', 'mixer grinder', 'water purifier', 'ceiling fan', 'insurance policy', 'savings account', 'credit card', 'home loan', 'fixed deposit'],
    cities: ['Mumbai', 'Delhi', 'Bengaluru', 'Chennai', 'Kolkata', 'Hyderabad', 'Pune', 'Ahmedabad', 'Jaipur', 'Lucknow', 'Kochi', 'Indore', 'Bhopal', 'Nagpur', 'Surat', 'Patna', 'Guwahati', 'Chandigarh', 'Mysuru', 'Coimbatore'],
    days: ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'],
    names: namesOf('latin-indian', 'international'),
    sentences: [
      'Our {city} store is open from {n} am to {m} pm, {day} to {day2}.',
      'The {product} comes with a warranty of {n} years, covering parts and labour.',
      'To return a {product}, bring the receipt to any branch within {n} days of purchase.',
      'Delivery of a {product} to {city} usually takes {n} working days.',
      '{name} from our {city} branch can answer questions about the {product}.',
      'Monthly instalments for the {product} start at {n} rupees.',
      'Installation of the {product} is free in {city} and the towns nearby.',
      'Customer care answers calls every day except {day}, from {n} in the morning.',
      'If your {product} stops working, switch it off and on again, then check the power cable.',
      'Refunds reach the original payment method within {n} days.',
      'You can follow the delivery of your {product} with the link in the confirmation message.',
      'Our service centre in {city} repairs a {product} within {n} days.',
      'Members get {n} percent off every {product} on {day}.',
      'The {product} is sold in {n} colours and two sizes.',
      'Please keep your order number at hand when you call about a {product}.',
      'Cash on delivery is available in {city} for orders below {n} rupees.',
      'Book a visit with {name} to see the {product} before you buy it.',
      'Spare parts for the {product} are kept in stock for {n} years.',
    ],
    questions: [
      'What is the warranty on the {product}?',
      'When does the {city} store open on {day}?',
      'How long does delivery to {city} take?',
      'Can I return a {product} after {n} days?',
      'Is cash on delivery available in {city}?',
      'Who can help me with a {product} in {city}?',
      'How many days until my refund arrives?',
      'Is installation of the {product} free?',
      'How much are the monthly instalments for a {product}?',
      'My {product} stopped working, what should I do?',
    ],
    joiner: ' ',
  },
  devanagari: {
    products: ['लैपटॉप', 'फ़ोन', 'प्रिंटर', 'राउटर', 'हेडफ़ोन', 'कैमरा', 'टैबलेट', 'मॉनिटर', 'कीबोर्ड', 'चार्जर', 'फ्रिज', 'माइक्रोवेव', 'वॉशिंग मशीन', 'एयर कंडीशनर', 'टेलीविज़न', 'मिक्सर', 'पंखा', 'बीमा पॉलिसी', 'बचत खाता', 'क्रेडिट कार्ड', 'गृह ऋण'],
    cities: ['मुंबई', 'दिल्ली', 'बेंगलुरु', 'चेन्नई', 'कोलकाता', 'हैदराबाद', 'पुणे', 'अहमदाबाद', 'जयपुर', 'लखनऊ', 'इंदौर', 'भोपाल', 'नागपुर', 'पटना', 'कानपुर', 'वाराणसी'],
    days: ['सोमवार', 'मंगलवार', 'बुधवार', 'गुरुवार', 'शुक्रवार', 'शनिवार', 'रविवार'],
    names: namesOf('devanagari'),
    sentences: [
      'हमारा {city} स्टोर {day} से {day2} तक सुबह {n} बजे से शाम {m} बजे तक खुला रहता है।',
      '{product} पर {n} साल की वारंटी मिलती है, जिसमें पुर्ज़े और मरम्मत शामिल हैं।',
      '{product} वापस करने के लिए ख़रीद के {n} दिनों के भीतर रसीद के साथ किसी भी शाखा में आएँ।',
      '{city} में {product} की डिलीवरी में आमतौर पर {n} कार्य दिवस लगते हैं।',
      'हमारी {city} शाखा के {name} {product} के बारे में आपके सवालों का जवाब दे सकते हैं।',
      '{product} की मासिक किस्तें {n} रुपये से शुरू होती हैं।',
      '{city} और आसपास के शहरों में {product} की स्थापना मुफ़्त है।',
      'ग्राहक सेवा {day} को छोड़कर हर दिन सुबह {n} बजे से कॉल का जवाब देती है।',
      'अगर आपका {product} काम करना बंद कर दे, तो उसे बंद करके फिर से चालू करें और बिजली का तार जाँचें।',
      'रिफ़ंड {n} दिनों के भीतर मूल भुगतान माध्यम में पहुँच जाता है।',
      '{city} का सर्विस सेंटर {product} की मरम्मत {n} दिनों में करता है।',
      'सदस्यों को {day} को हर {product} पर {n} प्रतिशत की छूट मिलती है।',
      'कृपया {product} के बारे में कॉल करते समय अपना ऑर्डर नंबर तैयार रखें।',
      '{city} में {n} रुपये से कम के ऑर्डर पर कैश ऑन डिलीवरी उपलब्ध है।',
      'ख़रीदने से पहले {product} देखने के लिए {name} के साथ समय तय करें।',
      '{product} के पुर्ज़े {n} साल तक स्टॉक में रखे जाते हैं।',
    ],
    questions: [
      '{product} पर कितनी वारंटी है?',
      '{city} स्टोर {day} को कब खुलता है?',
      '{city} में डिलीवरी में कितने दिन लगते हैं?',
      'क्या मैं {n} दिन बाद {product} वापस कर सकता हूँ?',
      'क्या {city} में कैश ऑन डिलीवरी उपलब्ध है?',
      '{city} में {product} के बारे में कौन मदद कर सकता है?',
      'मेरा रिफ़ंड कितने दिनों में आएगा?',
      'क्या {product} की स्थापना मुफ़्त है?',
      '{product} की मासिक किस्त कितनी है?',
      'मेरा {product} काम नहीं कर रहा, मैं क्या करूँ?',
    ],
    joiner: ' ',
  },
  bengali: {
    products: ['ল্যাপটপ', 'ফোন', 'প্রিন্টার', 'রাউটার', 'হেডফোন', 'ক্যামেরা', 'ট্যাবলেট', 'মনিটর', 'চার্জার', 'ফ্রিজ', 'মাইক্রোওয়েভ', 'ওয়াশিং মেশিন', 'টেলিভিশন', 'পাখা', 'বিমা পলিসি', 'সঞ্চয় অ্যাকাউন্ট', 'ক্রেডিট কার্ড', 'গৃহঋণ'],
    cities: ['কলকাতা', 'ঢাকা', 'শিলিগুড়ি', 'দুর্গাপুর', 'আসানসোল', 'হাওড়া', 'চট্টগ্রাম', 'খুলনা', 'সিলেট', 'বর্ধমান', 'মালদা', 'আগরতলা'],
    days: ['সোমবার', 'মঙ্গলবার', 'বুধবার', 'বৃহস্পতিবার', 'শুক্রবার', 'শনিবার', 'রবিবার'],
    names: namesOf('bengali'),
    sentences: [
      'আমাদের {city} দোকান {day} থেকে {day2} সকাল {n}টা থেকে সন্ধ্যা {m}টা পর্যন্ত খোলা থাকে।',
      '{product} কিনলে {n} বছরের ওয়ারেন্টি পাওয়া যায়।',
      '{product} ফেরত দিতে কেনার {n} দিনের মধ্যে রসিদ নিয়ে যেকোনো শাখায় আসুন।',
      '{city} শহরে {product} পৌঁছাতে সাধারণত {n} কর্মদিবস লাগে।',
      'আমাদের {city} শাখার {name} {product} সম্পর্কে আপনার প্রশ্নের উত্তর দিতে পারেন।',
      '{product} কেনার মাসিক কিস্তি {n} টাকা থেকে শুরু।',
      'গ্রাহক পরিষেবা {day} ছাড়া প্রতিদিন সকাল {n}টা থেকে ফোন ধরে।',
      'আপনার {product} কাজ না করলে প্রথমে সেটি বন্ধ করে আবার চালু করুন।',
      'টাকা ফেরত {n} দিনের মধ্যে আসল পেমেন্ট মাধ্যমে জমা হয়।',
      '{city} সার্ভিস সেন্টারে {product} মেরামত হয় {n} দিনে।',
      'সদস্যরা {day} প্রতিটি {product} কিনলে {n} শতাংশ ছাড় পান।',
      '{product} নিয়ে ফোন করার সময় অর্ডার নম্বর হাতের কাছে রাখুন।',
      '{city} শহরে {n} টাকার কম অর্ডারে ক্যাশ অন ডেলিভারি পাওয়া যায়।',
      'কেনার আগে {product} দেখতে {name} এর সঙ্গে সময় ঠিক করুন।',
    ],
    questions: [
      '{product} কিনলে কত বছরের ওয়ারেন্টি পাওয়া যায়?',
      '{city} দোকান {day} কখন খোলে?',
      '{city} শহরে পৌঁছাতে কত দিন লাগে?',
      '{n} দিন পরে কি {product} ফেরত দেওয়া যায়?',
      '{city} শহরে কি ক্যাশ অন ডেলিভারি আছে?',
      '{product} নিয়ে কে সাহায্য করতে পারেন?',
      'টাকা ফেরত কত দিনে আসে?',
      '{product} কেনার মাসিক কিস্তি কত?',
      'আমার {product} কাজ করছে না, কী করব?',
    ],
    joiner: ' ',
  },
  tamil: {
    products: ['மடிக்கணினி', 'கைபேசி', 'அச்சுப்பொறி', 'திசைவி', 'தலையணி', 'புகைப்படக்கருவி', 'திரை', 'மின்னேற்றி', 'குளிர்சாதனப்பெட்டி', 'நுண்ணலை அடுப்பு', 'சலவை இயந்திரம்', 'தொலைக்காட்சி', 'மின்விசிறி', 'காப்பீட்டுத் திட்டம்', 'சேமிப்புக் கணக்கு', 'கடன் அட்டை', 'வீட்டுக் கடன்'],
    cities: ['சென்னை', 'கோயம்புத்தூர்', 'மதுரை', 'திருச்சி', 'சேலம்', 'திருநெல்வேலி', 'ஈரோடு', 'வேலூர்', 'தஞ்சாவூர்', 'புதுச்சேரி', 'கன்னியாகுமரி', 'ஓசூர்'],
    days: ['திங்கள்', 'செவ்வாய்', 'புதன்', 'வியாழன்', 'வெள்ளி', 'சனி', 'ஞாயிறு'],
    names: namesOf('tamil'),
    sentences: [
      'எங்கள் {city} கடை {day} முதல் {day2} வரை காலை {n} மணி முதல் மாலை {m} மணி வரை திறந்திருக்கும்.',
      '{product} வாங்கினால் {n} ஆண்டு உத்தரவாதம் கிடைக்கும்.',
      '{product} திருப்பித் தர வாங்கிய {n} நாட்களுக்குள் ரசீதுடன் எந்தக் கிளைக்கும் வாருங்கள்.',
      '{city} நகருக்கு {product} விநியோகம் பொதுவாக {n} வேலை நாட்கள் ஆகும்.',
      'எங்கள் {city} கிளையின் {name} {product} பற்றிய கேள்விகளுக்குப் பதில் அளிப்பார்.',
      '{product} மாதத் தவணை {n} ரூபாயில் தொடங்குகிறது.',
      'வாடிக்கையாளர் சேவை {day} தவிர தினமும் காலை {n} மணி முதல் அழைப்புகளை ஏற்கிறது.',
      'உங்கள் {product} வேலை செய்யவில்லை என்றால் முதலில் அதை அணைத்து மீண்டும் இயக்குங்கள்.',
      'பணம் {n} நாட்களுக்குள் அசல் கட்டண முறைக்குத் திருப்பி அனுப்பப்படும்.',
      '{city} சேவை மையத்தில் {product} பழுது {n} நாட்களில் சரிசெய்யப்படும்.',
      'உறுப்பினர்களுக்கு {day} அன்று ஒவ்வொரு {product} மீதும் {n} சதவீதம் தள்ளுபடி உண்டு.',
      '{product} பற்றி அழைக்கும்போது உங்கள் ஆர்டர் எண்ணைத் தயாராக வைத்திருங்கள்.',
      '{city} நகரில் {n} ரூபாய்க்குக் குறைவான ஆர்டர்களுக்குப் பணம் செலுத்தும் வசதி உண்டு.',
      'வாங்குவதற்கு முன் {product} பார்க்க {name} உடன் நேரம் பதிவு செய்யுங்கள்.',
    ],
    questions: [
      '{product} வாங்கினால் எத்தனை ஆண்டு உத்தரவாதம்?',
      '{city} கடை {day} எப்போது திறக்கும்?',
      '{city} நகருக்கு விநியோகம் எத்தனை நாட்கள் ஆகும்?',
      '{n} நாட்களுக்குப் பிறகு {product} திருப்பித் தரலாமா?',
      '{product} பற்றி யார் உதவுவார்?',
      'பணம் எத்தனை நாட்களில் திரும்ப வரும்?',
      '{product} மாதத் தவணை எவ்வளவு?',
      'என் {product} வேலை செய்யவில்லை, என்ன செய்வது?',
    ],
    joiner: ' ',
  },
  chinese: {
    products: ['笔记本电脑', '手机', '打印机', '路由器', '耳机', '相机', '平板电脑', '显示器', '键盘', '充电器', '冰箱', '微波炉', '洗衣机', '空调', '电视机', '电风扇', '保险', '储蓄账户', '信用卡', '房贷'],
    cities: ['北京', '上海', '广州', '深圳', '成都', '杭州', '武汉', '西安', '南京', '重庆', '天津', '苏州', '长沙', '青岛'],
    days: ['星期一', '星期二', '星期三', '星期四', '星期五', '星期六', '星期日'],
    names: namesOf('cjk'),
    sentences: [
      '我们的{city}门店{day}至{day2}营业，时间是早上{n}点到晚上{m}点。',
      '{product}享受{n}年保修，包括零件和人工。',
      '退回{product}请在购买后{n}天内携带收据到任何门店。',
      '{product}送到{city}通常需要{n}个工作日。',
      '{city}分店的{name}可以解答关于{product}的问题。',
      '{product}的分期付款每月{n}元起。',
      '{city}及周边城市免费安装{product}。',
      '客服热线除{day}外每天早上{n}点开始接听电话。',
      '如果您的{product}无法使用，请先关机再重新启动，并检查电源线。',
      '退款将在{n}天内退回原支付方式。',
      '{city}维修中心会在{n}天内修好{product}。',
      '会员在{day}购买任何{product}可享受{n}折优惠。',
      '咨询{product}时请准备好您的订单号。',
      '{city}的订单低于{n}元可以货到付款。',
      '购买前可以预约{name}到店查看{product}。',
    ],
    questions: [
      '{product}的保修期是多久？',
      '{city}门店{day}几点开门？',
      '送到{city}需要几天？',
      '{n}天后还能退回{product}吗？',
      '{city}可以货到付款吗？',
      '谁可以解答{product}的问题？',
      '退款多久能到账？',
      '{product}免费安装吗？',
      '{product}每月分期付款多少钱？',
      '我的{product}坏了怎么办？',
    ],
    joiner: '',
  },
  arabic: {
    products: ['حاسوب محمول', 'هاتف', 'طابعة', 'موجه', 'سماعات', 'كاميرا', 'جهاز لوحي', 'شاشة', 'لوحة مفاتيح', 'شاحن', 'ثلاجة', 'ميكروويف', 'غسالة', 'مكيف', 'تلفزيون', 'مروحة', 'وثيقة تأمين', 'حساب توفير', 'بطاقة ائتمان', 'قرض سكني'],
    cities: ['دبي', 'الرياض', 'القاهرة', 'جدة', 'الدوحة', 'عمان', 'الكويت', 'مسقط', 'المنامة', 'أبوظبي', 'الشارقة', 'الإسكندرية'],
    days: ['الاثنين', 'الثلاثاء', 'الأربعاء', 'الخميس', 'الجمعة', 'السبت', 'الأحد'],
    names: namesOf('arabic'),
    sentences: [
      'يفتح متجرنا في {city} من {day} إلى {day2} من الساعة {n} صباحاً حتى الساعة {m} مساءً.',
      'يأتي {product} مع ضمان لمدة {n} سنوات يشمل القطع والعمالة.',
      'لإرجاع {product} أحضر الإيصال إلى أي فرع خلال {n} يوماً من الشراء.',
      'يستغرق توصيل {product} إلى {city} عادةً {n} أيام عمل.',
      'يمكن أن يجيب {name} في فرعنا في {city} عن أسئلتك حول {product}.',
      'تبدأ الأقساط الشهرية لـ{product} من {n} درهم.',
      'التركيب مجاني لـ{product} في {city} والمدن القريبة.',
      'يرد فريق خدمة العملاء كل يوم ما عدا {day} من الساعة {n} صباحاً.',
      'إذا توقف {product} عن العمل فأطفئه ثم شغّله مرة أخرى وتحقق من سلك الكهرباء.',
      'تُعاد المبالغ إلى وسيلة الدفع الأصلية خلال {n} أيام.',
      'يُصلح مركز الخدمة في {city} {product} خلال {n} أيام.',
      'يحصل الأعضاء يوم {day} على خصم {n} بالمئة على كل {product}.',
      'يرجى تجهيز رقم الطلب عند الاتصال بخصوص {product}.',
      'الدفع عند الاستلام متاح في {city} للطلبات الأقل من {n} درهم.',
    ],
    questions: [
      'ما مدة الضمان على {product}؟',
      'متى يفتح متجر {city} يوم {day}؟',
      'كم يستغرق التوصيل إلى {city}؟',
      'هل يمكنني إرجاع {product} بعد {n} أيام؟',
      'هل الدفع عند الاستلام متاح في {city}؟',
      'من يمكنه مساعدتي بخصوص {product} في {city}؟',
      'متى يصل المبلغ المسترد؟',
      'هل تركيب {product} مجاني؟',
      'كم القسط الشهري لـ{product}؟',
      'توقف {product} عن العمل، ماذا أفعل؟',
    ],
    joiner: ' ',
  },
};

export type TextGenerator = ReturnType<typeof textGenerator>;

/** Passages (about `length` characters each) and questions, deterministic for a given seed. */
export function textGenerator(seed: number) {
  const random = randomGenerator(seed);
  const fill = (template: string, language: Language) =>
    template
      .replace(/\{product\}/g, () => random.pick(language.products))
      .replace(/\{city\}/g, () => random.pick(language.cities))
      .replace(/\{day\}/g, () => random.pick(language.days))
      .replace(/\{day2\}/g, () => random.pick(language.days))
      .replace(/\{name\}/g, () => random.pick(language.names))
      .replace(/\{n\}/g, () => String(random.int(1, 30)))
      .replace(/\{m\}/g, () => String(random.int(5, 11)));
  return {
    /** A passage of about `length` characters: sentences of the script, in paragraphs of 2–4 sentences. */
    passage(script: Script, length = 900): string {
      const language = LANGUAGES[script];
      const paragraphs: string[] = [];
      let size = 0;
      while (size < length) {
        const sentences = Array.from({ length: random.int(2, 4) }, () => fill(random.pick(language.sentences), language));
        const paragraph = sentences.join(language.joiner);
        paragraphs.push(paragraph);
        size += paragraph.length + 2;
      }
      return paragraphs.join('\n\n');
    },
    question(script: Script): string {
      const language = LANGUAGES[script];
      return fill(random.pick(language.questions), language);
    },
    pick: random.pick,
    int: random.int,
  };
}
