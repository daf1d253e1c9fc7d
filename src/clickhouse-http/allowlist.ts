/**
 * What a BI statement may use, by name: the one reviewed list of the ClickHouse HTTP interface.
 * A statement runs only if every function, table function, table, format and setting it names is
 * here; anything else is refused, however it is reached (a scalar subquery, a CTE, a parameter).
 * Each entry reads nothing but its arguments and the rows of the tables the query names (which the
 * team filter narrows to the team's own). Reviewed against the engine of chdb 3.4 (ClickHouse 26.7):
 * what a later engine adds is refused until someone reads what it does and adds it here.
 *
 * Left out on purpose, for the record: everything that reaches files (file, the filesystem*
 * functions, INTO OUTFILE, formats and settings that name a schema or template file), the network
 * (url, s3, hdfs, remote, AI functions, the Avro schema registry), processes (executable),
 * dictionaries and models (dict*, region*, catboostEvaluate, naiveBayesClassifier), other tables by
 * name (joinGet, hasColumnInTable), server internals (introspection, getSetting, getMacro,
 * hostName, uptime, roles and profiles, transactions) and sleep.
 */

export const names = (list: string) => list.split(/\s+/).filter(Boolean);

/** Aggregate and window functions: over the rows they are given (flameGraph, which symbolises addresses, and groupFormat, which writes through any format, left out). */
export const AGGREGATE_FUNCTIONS: ReadonlySet<string> = new Set(
  names(
    `aggThrow analysisOfVariance any anyHeavy anyLast anyLast_respect_nulls any_respect_nulls approx_top_k
     approx_top_sum argAndMax argAndMin argMax argMin avg avgWeighted boundingRatio categoricalInformationValue
     contingency corr corrMatrix corrStable count covarPop covarPopMatrix covarPopStable covarSamp covarSampMatrix
     covarSampStable cramersV cramersVBiasCorrected cume_dist deltaSum deltaSumTimestamp denseRank distinctDynamicTypes
     distinctJSONPaths distinctJSONPathsAndTypes entropy estimateCompressionRatio exponentialMovingAverage
     exponentialTimeDecayedAvg exponentialTimeDecayedCount exponentialTimeDecayedMax exponentialTimeDecayedSum
     groupArray groupArrayInsertAt groupArrayIntersect groupArrayLast groupArrayMovingAvg
     groupArrayMovingSum groupArraySample groupArraySorted groupBitAnd groupBitOr groupBitXor groupBitmap
     groupBitmapAnd groupBitmapOr groupBitmapXor groupConcat groupNumericIndexedVector groupUniqArray
     histogram intervalLengthSum kolmogorovSmirnovTest kurtPop kurtSamp lag lagInFrame largestTriangleThreeBuckets lead
     leadInFrame mannWhitneyUTest max maxIntersections maxIntersectionsPosition maxMappedArrays meanZTest min
     minMappedArrays nonNegativeDerivative nothing nothingNull nothingUInt64 nth_value ntile percentRank quantile
     quantileBFloat16 quantileBFloat16Weighted quantileDD quantileDeterministic quantileExact quantileExactExclusive
     quantileExactHigh quantileExactInclusive quantileExactLow quantileExactWeighted quantileExactWeightedInterpolated
     quantileGK quantileInterpolatedWeighted quantilePrometheusHistogram quantileTDigest quantileTDigestWeighted
     quantileTiming quantileTimingWeighted quantiles quantilesBFloat16 quantilesBFloat16Weighted quantilesDD
     quantilesDeterministic quantilesExact quantilesExactExclusive quantilesExactHigh quantilesExactInclusive
     quantilesExactLow quantilesExactWeighted quantilesExactWeightedInterpolated quantilesGK
     quantilesInterpolatedWeighted quantilesPrometheusHistogram quantilesTDigest quantilesTDigestWeighted
     quantilesTiming quantilesTimingWeighted rank rankCorr retention row_number sequenceCount sequenceMatch
     sequenceMatchEvents sequenceNextNode simpleLinearRegression singleValueOrNull skewPop skewSamp sparkbar stddevPop
     stddevPopStable stddevSamp stddevSampStable studentTTest studentTTestOneSample sum sumCount sumKahan
     sumMapFiltered sumMapFilteredWithOverflow sumMapWithOverflow sumMappedArrays sumWithOverflow theilsU
     timeSeriesChangesToGrid timeSeriesDeltaToGrid timeSeriesDerivToGrid timeSeriesGroupArray timeSeriesIncreaseToGrid
     timeSeriesInstantDeltaToGrid timeSeriesInstantRateToGrid timeSeriesLastTwoSamples timeSeriesPredictLinearToGrid
     timeSeriesRateToGrid timeSeriesResampleToGridWithStaleness timeSeriesResetsToGrid topK topKWeighted uniq
     uniqCombined uniqCombined64 uniqExact uniqHLL12 uniqUpTo varPop varPopStable varSamp varSampStable welchTTest
     windowFunnel`,
  ),
);

/** Combinators an aggregate function's name may end with (sumIf, uniqStateMerge...): none reads anything. */
export const AGGREGATE_COMBINATORS = names('If Array Map Tuple SimpleState State MergeState Merge ForEach Distinct OrDefault OrNull Resample ArgMin ArgMax');

/** Ordinary functions, by the engine's categories; each group is whole unless its comment says what it leaves out. */
export const FUNCTIONS: ReadonlySet<string> = new Set([
  // Operators and arithmetic on their arguments.
  ...names(
    `abs avg2 byteSwap divide divideDecimal divideOrNull gcd ifNotFinite intDiv intDivOrNull intDivOrZero isFinite
     isInfinite isNaN lcm max2 midpoint min2 minus modulo moduloLegacy moduloOrNull moduloOrZero multiply
     multiplyDecimal negate plus positiveModulo positiveModuloOrNull sqr`,
  ),
  // Array functions over their arguments (lambdas included).
  ...names(
    `array arrayAUCPR arrayAll arrayAutocorrelation arrayAvg arrayBottomK arrayCompact arrayConcat arrayCount
     arrayCumSum arrayCumSumNonNegative arrayDifference arrayDistinct arrayDotProduct arrayElement arrayElementOrNull
     arrayEnumerate arrayEnumerateDense arrayEnumerateDenseRanked arrayEnumerateUniq arrayEnumerateUniqRanked
     arrayExcept arrayExists arrayFill arrayFilter arrayFirst arrayFirstIndex arrayFirstOrNull arrayFlatten arrayFold
     arrayIntersect arrayJaccardIndex arrayJoin arrayLast arrayLastIndex arrayLastOrNull arrayLevenshteinDistance
     arrayLevenshteinDistanceWeighted arrayMap arrayMax arrayMin arrayNormalizedGini arrayPartialReverseSort
     arrayPartialShuffle arrayPartialSort arrayPopBack arrayPopFront arrayProduct arrayPushBack arrayPushFront
     arrayROCAUC arrayRandomSample arrayReduce arrayReduceInRanges arrayRemove arrayResize arrayReverse
     arrayReverseFill arrayReverseSort arrayReverseSplit arrayRotateLeft arrayRotateRight arrayShiftLeft
     arrayShiftRight arrayShingles arrayShuffle arraySimilarity arraySlice arraySort arraySplit arraySum
     arraySymmetricDifference arrayTopK arrayTranspose arrayUnion arrayUniq arrayWithConstant arrayZip
     arrayZipUnaligned countEqual empty emptyArrayDate emptyArrayDateTime emptyArrayFloat32 emptyArrayFloat64
     emptyArrayInt16 emptyArrayInt32 emptyArrayInt64 emptyArrayInt8 emptyArrayString emptyArrayToSingle
     emptyArrayUInt16 emptyArrayUInt32 emptyArrayUInt64 emptyArrayUInt8 has hasAll hasAny hasSubstr indexOf
     indexOfAssumeSorted length notEmpty randomHadamardTransform range replicate reverse`,
  ),
  // Bit operations.
  ...names(
    `bitAnd bitCount bitHammingDistance bitNot bitOr bitRotateLeft bitRotateRight bitShiftLeft bitShiftRight bitSlice
     bitTest bitTestAll bitTestAny bitXor`,
  ),
  // Roaring bitmaps built from their arguments.
  ...names(
    `bitmapAnd bitmapAndCardinality bitmapAndnot bitmapAndnotCardinality bitmapBuild bitmapCardinality bitmapContains
     bitmapHasAll bitmapHasAny bitmapMax bitmapMin bitmapOr bitmapOrCardinality bitmapSubsetInRange bitmapSubsetLimit
     bitmapToArray bitmapTransform bitmapXor bitmapXorCardinality subBitmap`,
  ),
  // Comparison operators.
  ...names(
    `equals globalIn globalInIgnoreSet globalNotIn globalNotInIgnoreSet globalNotNullIn globalNotNullInIgnoreSet
     globalNullIn globalNullInIgnoreSet greater greaterOrEquals in inIgnoreSet isDistinctFrom isNotDistinctFrom less
     lessOrEquals notEquals notIn notInIgnoreSet notNullIn notNullInIgnoreSet nullIn nullInIgnoreSet`,
  ),
  // If, multiIf and friends.
  ...names(
    `clamp greatest if least multiIf`,
  ),
  // Date and time arithmetic and formatting (now() and today() read the clock only).
  ...names(
    `UTCTimestamp YYYYMMDDToDate YYYYMMDDToDate32 YYYYMMDDhhmmssToDateTime YYYYMMDDhhmmssToDateTime64 addDate addDays
     addHours addInterval addMicroseconds addMilliseconds addMinutes addMonths addNanoseconds addQuarters addSeconds
     addTupleOfIntervals addWeeks addYears age changeDay changeHour changeMinute changeMonth changeSecond changeYear
     dateDiff dateName dateTrunc formatDateTime formatDateTimeInJodaSyntax fromDaysSinceYearZero
     fromDaysSinceYearZero32 fromModifiedJulianDay fromModifiedJulianDayOrNull fromUTCTimestamp fromUnixTimestamp
     fromUnixTimestampInJodaSyntax localtime makeDate makeDate32 makeDateTime makeDateTime64 monthName now now64
     nowInBlock nowInBlock64 serverTimezone subDate subtractDays subtractHours subtractInterval subtractMicroseconds
     subtractMilliseconds subtractMinutes subtractMonths subtractNanoseconds subtractQuarters subtractSeconds
     subtractTupleOfIntervals subtractWeeks subtractYears timeDiff timeSlot timeSlots timestamp timezone timezoneOf
     timezoneOffset toDayOfMonth toDayOfWeek toDayOfYear toDaysInMonth toDaysSinceYearZero toHour toISOWeek toISOYear
     toLastDayOfMonth toLastDayOfWeek toMicrosecond toMillisecond toMinute toModifiedJulianDay
     toModifiedJulianDayOrNull toMonday toMonth toMonthNumSinceEpoch toNanosecond toQuarter toRelativeDayNum
     toRelativeHourNum toRelativeMinuteNum toRelativeMonthNum toRelativeQuarterNum toRelativeSecondNum
     toRelativeWeekNum toRelativeYearNum toSecond toStartOfDay toStartOfFifteenMinutes toStartOfFiveMinutes
     toStartOfHour toStartOfISOYear toStartOfInterval toStartOfMicrosecond toStartOfMillisecond toStartOfMinute
     toStartOfMonth toStartOfNanosecond toStartOfQuarter toStartOfSecond toStartOfTenMinutes toStartOfWeek
     toStartOfYear toTimeWithFixedDate toTimezone toUTCTimestamp toUnixTimestamp toWeek toYYYYMM toYYYYMMDD
     toYYYYMMDDhhmmss toYear toYearNumSinceEpoch toYearWeek today yesterday`,
  ),
  // Vector norms and distances.
  ...names(
    `L1Distance L1Norm L1Normalize L2Distance L2DistanceTransposed L2DistanceTransposedQuantized L2Norm L2Normalize
     L2SquaredDistance L2SquaredNorm LinfDistance LinfNorm LinfNormalize LpDistance LpNorm LpNormalize cosineDistance
     cosineDistanceTransposed cosineDistanceTransposedQuantized dotProductTransposed dotProductTransposedQuantized`,
  ),
  // Hex, bin and space-filling-curve encodings.
  ...names(
    `bin bitPositionsToArray bitmaskToArray bitmaskToList char hex hilbertDecode hilbertEncode mortonDecode
     mortonEncode sqidDecode sqidEncode unbin unhex`,
  ),
  // Encryption with keys the query itself carries.
  ...names(
    `HMAC aes_decrypt_mysql aes_encrypt_mysql decrypt encrypt tryDecrypt`,
  ),
  // Financial arithmetic.
  ...names(
    `financialInternalRateOfReturn financialInternalRateOfReturnExtended financialNetPresentValue
     financialNetPresentValueExtended`,
  ),
  // Geohash, H3, S2 and great-circle arithmetic on coordinates.
  ...names(
    `MGRSToGeo MVTBoundingBox MVTBoundingBoxMercator UTMToGeo areaCartesian areaSpherical geoDistance geoToH3 geoToMGRS
     geoToUTM geohashDecode geohashEncode geohashesInBox geometryIntersectCartesian geometryIntersectSpherical
     greatCircleAngle greatCircleDistance h3CellAreaM2 h3CellAreaRads2 h3Distance h3EdgeAngle h3EdgeLengthKm
     h3EdgeLengthM h3ExactEdgeLengthKm h3ExactEdgeLengthM h3ExactEdgeLengthRads h3GetBaseCell
     h3GetDestinationIndexFromUnidirectionalEdge h3GetFaces h3GetIndexesFromUnidirectionalEdge
     h3GetOriginIndexFromUnidirectionalEdge h3GetPentagonIndexes h3GetRes0Indexes h3GetResolution
     h3GetUnidirectionalEdge h3GetUnidirectionalEdgeBoundary h3GetUnidirectionalEdgesFromHexagon h3HexAreaKm2
     h3HexAreaM2 h3HexRing h3IndexesAreNeighbors h3IsPentagon h3IsResClassIII h3IsValid h3Line h3NumHexagons
     h3PointDistKm h3PointDistM h3PointDistRads h3PolygonToCells h3PolygonToCellsWithContainment h3ToCenterChild
     h3ToChildren h3ToGeo h3ToGeoBoundary h3ToParent h3ToString h3UnidirectionalEdgeIsValid h3kRing perimeterCartesian
     perimeterSpherical pointInEllipses pointInPolygon polygonsIntersectCartesian polygonsIntersectSpherical readWKB
     readWKT stringToH3 svg wkb wkt`,
  ),
  // Polygon arithmetic.
  ...names(
    `MVTEncode MVTEncodeGeom polygonAreaCartesian polygonAreaSpherical polygonConvexHullCartesian
     polygonPerimeterCartesian polygonPerimeterSpherical polygonsDistanceCartesian polygonsDistanceSpherical
     polygonsEqualsCartesian polygonsIntersectionCartesian polygonsIntersectionSpherical polygonsSymDifferenceCartesian
     polygonsSymDifferenceSpherical polygonsUnionCartesian polygonsUnionSpherical polygonsWithinCartesian
     polygonsWithinSpherical readWKBLineString readWKBMultiLineString readWKBMultiPolygon readWKBPoint readWKBPolygon
     readWKTLineString readWKTMultiLineString readWKTMultiPolygon readWKTPoint readWKTPolygon readWKTRing`,
  ),
  // Hashes of their arguments.
  ...names(
    `MD4 MD5 RIPEMD160 SHA1 SHA224 SHA256 SHA384 SHA512 SHA512_256 URLHash cityHash64 farmFingerprint64 farmHash64
     gccMurmurHash halfMD5 hiveHash icebergHash intHash32 intHash64 javaHash javaHashUTF16LE jumpConsistentHash
     kafkaMurmurHash keccak256 kostikConsistentHash metroHash64 murmurHash2_32 murmurHash2_64 murmurHash3_128
     murmurHash3_32 murmurHash3_64 ngramMinHash ngramMinHashArg ngramMinHashArgCaseInsensitive
     ngramMinHashArgCaseInsensitiveUTF8 ngramMinHashArgUTF8 ngramMinHashCaseInsensitive ngramMinHashCaseInsensitiveUTF8
     ngramMinHashUTF8 ngramSimHash ngramSimHashCaseInsensitive ngramSimHashCaseInsensitiveUTF8 ngramSimHashUTF8
     sipHash128 sipHash128Keyed sipHash128Reference sipHash128ReferenceKeyed sipHash64 sipHash64Keyed
     wordShingleMinHash wordShingleMinHashArg wordShingleMinHashArgCaseInsensitive
     wordShingleMinHashArgCaseInsensitiveUTF8 wordShingleMinHashArgUTF8 wordShingleMinHashCaseInsensitive
     wordShingleMinHashCaseInsensitiveUTF8 wordShingleMinHashUTF8 wordShingleSimHash wordShingleSimHashCaseInsensitive
     wordShingleSimHashCaseInsensitiveUTF8 wordShingleSimHashUTF8 wyHash64 xxHash32 xxHash64 xxHash64Spark xxh3
     xxh3_128`,
  ),
  // Parsing and formatting IP addresses (no lookups).
  ...names(
    `IPv4CIDRToRange IPv4NumToString IPv4NumToStringClassC IPv4StringToNum IPv4StringToNumOrDefault
     IPv4StringToNumOrNull IPv4ToIPv6 IPv6CIDRToRange IPv6NumToString IPv6StringToNum IPv6StringToNumOrDefault
     IPv6StringToNumOrNull cutIPv6 isIPAddressInRange isIPv4String isIPv6String toIPv4 toIPv4OrDefault toIPv4OrNull
     toIPv4OrZero toIPv6 toIPv6OrDefault toIPv6OrNull toIPv6OrZero`,
  ),
  // Parsing JSON text given as an argument.
  ...names(
    `JSONAllPaths JSONAllPathsWithTypes JSONAllValues JSONArrayLength JSONDynamicPaths JSONDynamicPathsWithTypes
     JSONExtract JSONExtractArrayRaw JSONExtractArrayRawCaseInsensitive JSONExtractBool JSONExtractBoolCaseInsensitive
     JSONExtractCaseInsensitive JSONExtractFloat JSONExtractFloatCaseInsensitive JSONExtractInt
     JSONExtractIntCaseInsensitive JSONExtractKeys JSONExtractKeysAndValues JSONExtractKeysAndValuesCaseInsensitive
     JSONExtractKeysAndValuesRaw JSONExtractKeysAndValuesRawCaseInsensitive JSONExtractKeysCaseInsensitive
     JSONExtractRaw JSONExtractRawCaseInsensitive JSONExtractString JSONExtractStringCaseInsensitive JSONExtractUInt
     JSONExtractUIntCaseInsensitive JSONHas JSONKey JSONLength JSONMergePatch JSONSharedDataPaths
     JSONSharedDataPathsWithTypes JSONType JSON_EXISTS JSON_QUERY JSON_VALUE dynamicElement dynamicType
     isDynamicElementInSharedData isValidJSON prettyPrintJSON simpleJSONExtractBool simpleJSONExtractFloat
     simpleJSONExtractInt simpleJSONExtractRaw simpleJSONExtractString simpleJSONExtractUInt simpleJSONHas toJSONString`,
  ),
  // And, or, not, xor.
  ...names(
    `and not or xor`,
  ),
  // Map functions.
  ...names(
    `extractKeyValuePairs extractKeyValuePairsWithEscaping map mapAdd mapAll mapApply mapConcat mapContainsKey
     mapContainsKeyLike mapContainsValue mapContainsValueLike mapExists mapExtractKeyLike mapExtractValueLike mapFilter
     mapFromArrays mapKeys mapPartialReverseSort mapPartialSort mapPopulateSeries mapReverseSort mapSort mapSubtract
     mapUpdate mapValues`,
  ),
  // Mathematical functions.
  ...names(
    `acos acosh asin asinh atan atan2 atanh cbrt cos cosh degrees e erf erfc exp exp10 exp2 factorial hypot intExp10
     intExp2 isPrime isProbablePrime lgamma log log10 log1p log2 pi pow proportionsZTest radians sigmoid sign sin sinh
     sqrt tan tanh tgamma widthBucket`,
  ),
  // NULL handling.
  ...names(
    `assumeNotNull coalesce firstNonDefault ifNull isNotNull isNull isNullable isZeroOrNull nullIf toNullable`,
  ),
  // Numeric indexed vectors built from arguments.
  ...names(
    `numericIndexedVectorAllValueSum numericIndexedVectorBuild numericIndexedVectorCardinality
     numericIndexedVectorGetValue numericIndexedVectorPointwiseAdd numericIndexedVectorPointwiseDivide
     numericIndexedVectorPointwiseEqual numericIndexedVectorPointwiseGreater numericIndexedVectorPointwiseGreaterEqual
     numericIndexedVectorPointwiseLess numericIndexedVectorPointwiseLessEqual numericIndexedVectorPointwiseMultiply
     numericIndexedVectorPointwiseNotEqual numericIndexedVectorPointwiseSubtract numericIndexedVectorShortDebugString
     numericIndexedVectorToMap`,
  ),
  // BFloat16 quantisation.
  ...names(
    `dequantizeInt8ToBFloat16 quantizeBFloat16ToInt8`,
  ),
  // Random numbers and strings.
  ...names(
    `fuzzBits rand rand64 randBernoulli randBinomial randCanonical randChiSquared randConstant randExponential
     randFisherF randLogNormal randNegativeBinomial randNormal randPoisson randStudentT randUniform randomFixedString
     randomPrintableASCII randomString randomStringUTF8`,
  ),
  // Rounding.
  ...names(
    `ceil floor round roundAge roundBankers roundDown roundDuration roundToExp2 trunc`,
  ),
  // String functions.
  ...names(
    `CRC32 CRC32IEEE CRC64 appendTrailingCharIfAbsent ascii base32Decode base32Encode base58Decode base58Encode
     base64Decode base64Encode base64URLDecode base64URLEncode basename byteHammingDistance caseFoldUTF8 chdb
     compareSubstrings concat concatAssumeInjective concatWithSeparator concatWithSeparatorAssumeInjective conv
     convertCharset damerauLevenshteinDistance decodeHTMLComponent decodeXMLComponent editDistance editDistanceUTF8
     encodeXMLComponent endsWith endsWithCaseInsensitive endsWithCaseInsensitiveUTF8 endsWithUTF8 extractTextFromHTML
     firstLine initcap initcapUTF8 isValidASCII isValidUTF8 jaroSimilarity jaroWinklerSimilarity left leftPad
     leftPadUTF8 leftUTF8 lengthUTF8 lower lowerUTF8 naturalSortKey normalizeUTF8NFC normalizeUTF8NFD normalizeUTF8NFKC
     normalizeUTF8NFKCCasefold normalizeUTF8NFKD regexpExtract regexpPosition removeDiacriticsUTF8 repeat reverseUTF8
     right rightPad rightPadUTF8 rightUTF8 soundex space sparseGrams sparseGramsHashes sparseGramsHashesUTF8
     sparseGramsUTF8 startsWith startsWithCaseInsensitive startsWithCaseInsensitiveUTF8 startsWithUTF8
     stringBytesEntropy stringBytesUniq stringJaccardIndex stringJaccardIndexUTF8 substring substringIndex
     substringIndexUTF8 substringUTF8 toValidUTF8 trimBoth trimLeft trimRight tryBase32Decode tryBase58Decode
     tryBase64Decode tryBase64URLDecode upper upperUTF8`,
  ),
  // Replace and regex replace.
  ...names(
    `format overlay overlayUTF8 printf regexpQuoteMeta replaceAll replaceOne replaceRegexpAll replaceRegexpOne
     translate translateUTF8`,
  ),
  // Search, match and regex.
  ...names(
    `countMatches countMatchesCaseInsensitive countSubstrings countSubstringsCaseInsensitive
     countSubstringsCaseInsensitiveUTF8 extract extractAll extractAllGroupsHorizontal extractGroups hasAllTokens
     hasAnyTokens hasPhrase hasSubsequence hasSubsequenceCaseInsensitive hasSubsequenceCaseInsensitiveUTF8
     hasSubsequenceUTF8 hasToken hasTokenCaseInsensitive hasTokenCaseInsensitiveOrNull hasTokenOrNull highlight ilike
     like locate match multiFuzzyMatchAllIndices multiFuzzyMatchAny multiFuzzyMatchAnyIndex multiMatchAllIndices
     multiMatchAny multiMatchAnyIndex multiSearchAllPositions multiSearchAllPositionsCaseInsensitive
     multiSearchAllPositionsCaseInsensitiveUTF8 multiSearchAllPositionsUTF8 multiSearchAny
     multiSearchAnyCaseInsensitive multiSearchAnyCaseInsensitiveUTF8 multiSearchAnyUTF8 multiSearchFirstIndex
     multiSearchFirstIndexCaseInsensitive multiSearchFirstIndexCaseInsensitiveUTF8 multiSearchFirstIndexUTF8
     multiSearchFirstPosition multiSearchFirstPositionCaseInsensitive multiSearchFirstPositionCaseInsensitiveUTF8
     multiSearchFirstPositionUTF8 ngramDistance ngramDistanceCaseInsensitive ngramDistanceCaseInsensitiveUTF8
     ngramDistanceUTF8 ngramSearch ngramSearchCaseInsensitive ngramSearchCaseInsensitiveUTF8 ngramSearchUTF8 notILike
     notLike position positionCaseInsensitive positionCaseInsensitiveUTF8 positionUTF8`,
  ),
  // Splitting strings.
  ...names(
    `alphaTokens arrayStringConcat extractAllGroupsVertical naiveBayesNgrams ngrams reverseBySeparator splitByChar
     splitByNonAlpha splitByRegexp splitByString splitByWhitespace tokens tokensForLikePattern`,
  ),
  // Tumble and hop windows.
  ...names(
    `hop hopEnd hopStart tumble tumbleEnd tumbleStart windowID`,
  ),
  // Tuple functions.
  ...names(
    `dotProduct flattenTuple tuple tupleConcat tupleDivide tupleDivideByNumber tupleElement tupleHammingDistance
     tupleIntDiv tupleIntDivByNumber tupleIntDivOrZero tupleIntDivOrZeroByNumber tupleMinus tupleModulo
     tupleModuloByNumber tupleMultiply tupleMultiplyByNumber tupleNames tupleNegate tuplePlus
     tuplePositiveModuloByNumber tupleToNameValuePairs`,
  ),
  // Casts and parsing of their arguments (formatRow and formatRowNoNewline left out: a format may read a schema file).
  ...names(
    `CAST DATE accurateCast accurateCastOrDefault accurateCastOrNull fromUnixTimestamp64Micro fromUnixTimestamp64Milli
     fromUnixTimestamp64Nano fromUnixTimestamp64Second parseDateTime parseDateTime32BestEffort
     parseDateTime32BestEffortOrNull parseDateTime32BestEffortOrZero parseDateTime64 parseDateTime64BestEffort
     parseDateTime64BestEffortOrNull parseDateTime64BestEffortOrZero parseDateTime64BestEffortUS
     parseDateTime64BestEffortUSOrNull parseDateTime64BestEffortUSOrZero parseDateTime64InJodaSyntax
     parseDateTime64InJodaSyntaxOrNull parseDateTime64InJodaSyntaxOrZero parseDateTime64OrNull parseDateTime64OrZero
     parseDateTimeBestEffort parseDateTimeBestEffortOrNull parseDateTimeBestEffortOrZero parseDateTimeBestEffortUS
     parseDateTimeBestEffortUSOrNull parseDateTimeBestEffortUSOrZero parseDateTimeInJodaSyntax
     parseDateTimeInJodaSyntaxOrNull parseDateTimeInJodaSyntaxOrZero parseDateTimeOrNull parseDateTimeOrZero
     reinterpret reinterpretAsDate reinterpretAsDateTime reinterpretAsFixedString reinterpretAsFloat32
     reinterpretAsFloat64 reinterpretAsInt128 reinterpretAsInt16 reinterpretAsInt256 reinterpretAsInt32
     reinterpretAsInt64 reinterpretAsInt8 reinterpretAsString reinterpretAsUInt128 reinterpretAsUInt16
     reinterpretAsUInt256 reinterpretAsUInt32 reinterpretAsUInt64 reinterpretAsUInt8 reinterpretAsUUID toBFloat16
     toBFloat16OrNull toBFloat16OrZero toBool toDate toDate32 toDate32OrDefault toDate32OrNull toDate32OrZero
     toDateOrDefault toDateOrNull toDateOrZero toDateTime toDateTime32 toDateTime64 toDateTime64OrDefault
     toDateTime64OrNull toDateTime64OrZero toDateTimeOrDefault toDateTimeOrNull toDateTimeOrZero toDecimal128
     toDecimal128OrDefault toDecimal128OrNull toDecimal128OrZero toDecimal256 toDecimal256OrDefault toDecimal256OrNull
     toDecimal256OrZero toDecimal32 toDecimal32OrDefault toDecimal32OrNull toDecimal32OrZero toDecimal64
     toDecimal64OrDefault toDecimal64OrNull toDecimal64OrZero toDecimalString toFixedString toFloat32
     toFloat32OrDefault toFloat32OrNull toFloat32OrZero toFloat64 toFloat64OrDefault toFloat64OrNull toFloat64OrZero
     toInt128 toInt128OrDefault toInt128OrNull toInt128OrZero toInt16 toInt16OrDefault toInt16OrNull toInt16OrZero
     toInt256 toInt256OrDefault toInt256OrNull toInt256OrZero toInt32 toInt32OrDefault toInt32OrNull toInt32OrZero
     toInt64 toInt64OrDefault toInt64OrNull toInt64OrZero toInt8 toInt8OrDefault toInt8OrNull toInt8OrZero toInterval
     toIntervalDay toIntervalHour toIntervalMicrosecond toIntervalMillisecond toIntervalMinute toIntervalMonth
     toIntervalNanosecond toIntervalQuarter toIntervalSecond toIntervalWeek toIntervalYear toLowCardinality toString
     toStringCutToZero toTime toTime64 toTime64OrNull toTime64OrZero toTimeOrNull toTimeOrZero toUInt128
     toUInt128OrDefault toUInt128OrNull toUInt128OrZero toUInt16 toUInt16OrDefault toUInt16OrNull toUInt16OrZero
     toUInt256 toUInt256OrDefault toUInt256OrNull toUInt256OrZero toUInt32 toUInt32OrDefault toUInt32OrNull
     toUInt32OrZero toUInt64 toUInt64OrDefault toUInt64OrNull toUInt64OrZero toUInt8 toUInt8OrDefault toUInt8OrNull
     toUInt8OrZero toUUID toUUIDOrZero toUnixTimestamp64Micro toUnixTimestamp64Milli toUnixTimestamp64Nano
     toUnixTimestamp64Second`,
  ),
  // Parsing URL text given as an argument; nothing is fetched (the *Custom* variants, which read a TLD list named in the server configuration, left out).
  ...names(
    `URLHierarchy URLPathHierarchy cutFragment cutQueryString cutQueryStringAndFragment cutToFirstSignificantSubdomain
     cutToFirstSignificantSubdomainRFC cutToFirstSignificantSubdomainWithWWW cutToFirstSignificantSubdomainWithWWWRFC
     cutURLParameter cutWWW decodeURLComponent decodeURLFormComponent domain domainRFC domainWithoutWWW
     domainWithoutWWWRFC encodeURLComponent encodeURLFormComponent extractURLParameter extractURLParameterNames
     extractURLParameters firstSignificantSubdomain firstSignificantSubdomainRFC fragment netloc path pathFull port
     portRFC protocol queryString queryStringAndFragment topLevelDomain topLevelDomainRFC`,
  ),
  // UUIDs.
  ...names(
    `UUIDNumToString UUIDStringToNum UUIDToNum UUIDv7ToDateTime dateTime64ToSnowflakeID dateTimeToSnowflakeID
     dateTimeToUUIDv7 generateSnowflakeID generateUUIDv4 generateUUIDv7 snowflakeIDToDateTime snowflakeIDToDateTime64
     toUUIDOrDefault toUUIDOrNull`,
  ),
  // Others, one by one: pure helpers, and constants of the query or its session that tell nothing of the server.
  ...names(
    `bar blockNumber blockSerializedSize blockSize byteSize colorOKLABToSRGB colorOKLCHToSRGB colorSRGBToOKLAB
     colorSRGBToOKLCH countDigits currentDatabase currentQueryID currentSchemas currentUser defaultValueOfArgumentType
     defaultValueOfTypeName digits dumpColumnStructure errorCodeToName finalizeAggregation flipCoordinates formatQuery
     formatQueryOrNull formatQuerySingleLine formatQuerySingleLineOrNull formatReadableDecimalSize
     formatReadableQuantity formatReadableSize formatReadableTimeDelta getSizeOfEnumType getSubcolumn
     getTypeSerializationStreams highlightQuery identity ignore indexHint initializeAggregation isConstant
     isDecimalOverflow lowCardinalityIndices lowCardinalityKeys MACNumToString MACStringToNum MACStringToOUI
     materialize minSampleSizeContinuous minSampleSizeConversion neighbor normalizeQuery normalizeQueryKeepNames
     normalizedQueryHash normalizedQueryHashKeepNames parseReadableSize parseReadableSizeOrNull parseReadableSizeOrZero
     parseTimeDelta queryID rowNumberInAllBlocks rowNumberInBlock runningAccumulate runningConcurrency
     runningDifference runningDifferenceStartingWithFirstValue throwIf toColumnTypeName tokenizeQuery toTypeName
     transform variantElement variantType version visibleWidth`,
  ),
  // What the parser and analyzer write into a query's tree for CAST, CASE, scalar subqueries and bit masks.
  ...names(
    `_CAST __actionName __bitBoolMaskAnd __bitBoolMaskOr __bitSwapLastTwo __bitWrapperFunc __getScalar
     __scalarSubqueryResult __toYearCalendarOnly caseWithExpression nested validateNestedArraySizes`,
  ),
  // Syntax the parser turns into a function of no category: lambdas, EXISTS, GROUPING, untuple, COUNT(DISTINCT).
  ...names('lambda exists grouping groupingOrdinary groupingForRollup groupingForCube groupingForGroupingSets untuple countDistinct'),
]);

/** Table functions that read nothing but what the query gives them. */
export const TABLE_FUNCTIONS: ReadonlySet<string> = new Set(names('numbers numbers_mt zeros zeros_mt generate_series generateSeries values null generateRandom'));

/**
 * System tables a client reads to find its way, and the columns of each it may read: the catalog
 * (tables, columns and databases, each filtered to this database by the policy), settings,
 * functions, formats, types and time zones, and the constant tables. Left out of the catalog's
 * columns: sizes and counts of rows, bytes, parts and marks (every team's data together), paths
 * on the server's disk, and loading and definer internals. `*` is every column of a table whose
 * rows are the engine's own constants.
 */
export const SYSTEM_TABLE_COLUMNS: ReadonlyMap<string, ReadonlySet<string> | '*'> = new Map<string, ReadonlySet<string> | '*'>([
  [
    'tables',
    new Set(
      names(
        `database name uuid engine is_temporary metadata_modification_time dependencies_database dependencies_table
         create_table_query engine_full as_select partition_key sorting_key primary_key sampling_key storage_policy comment`,
      ),
    ),
  ],
  [
    'columns',
    new Set(
      names(
        `database table name type position default_kind default_expression comment is_in_partition_key is_in_sorting_key
         is_in_primary_key is_in_sampling_key compression_codec character_octet_length numeric_precision
         numeric_precision_radix numeric_scale datetime_precision`,
      ),
    ),
  ],
  ['databases', new Set(names('name engine uuid comment'))],
  ...names('one numbers numbers_mt zeros zeros_mt settings functions table_functions data_type_families formats time_zones collations build_options').map(
    (table) => [table, '*'] as [string, '*'],
  ),
]);

/**
 * Output formats: text, JSON, columnar and binary encodings of the result. Left out: Template
 * (its settings name files), CapnProto and Protobuf (schema files), AvroConfluent (a schema
 * registry over the network), the wire protocols of other servers, and the odd ones (PNG, Npy,
 * Prometheus, Buffers, Hash).
 */
export const OUTPUT_FORMATS: ReadonlySet<string> = new Set(
  names(
    `TabSeparated TabSeparatedRaw TabSeparatedWithNames TabSeparatedWithNamesAndTypes TabSeparatedRawWithNames
     TabSeparatedRawWithNamesAndTypes TSV TSVRaw TSVWithNames TSVWithNamesAndTypes TSVRawWithNames
     TSVRawWithNamesAndTypes CSV CSVWithNames CSVWithNamesAndTypes CustomSeparated CustomSeparatedWithNames
     CustomSeparatedWithNamesAndTypes JSON JSONStrings JSONCompact JSONCompactStrings JSONColumns JSONColumnsWithMetadata
     JSONCompactColumns JSONEachRow JSONLines NDJSON JSONL JSONStringsEachRow JSONCompactEachRow
     JSONCompactEachRowWithNames JSONCompactEachRowWithNamesAndTypes JSONCompactStringsEachRow
     JSONCompactStringsEachRowWithNames JSONCompactStringsEachRowWithNamesAndTypes JSONEachRowWithProgress
     JSONStringsEachRowWithProgress JSONCompactEachRowWithProgress JSONCompactStringsEachRowWithProgress
     JSONObjectEachRow PrettyJSONEachRow PrettyJSONLines PrettyNDJSON XML TSKV Pretty PrettyCompact
     PrettyCompactMonoBlock PrettyCompactNoEscapes PrettyCompactNoEscapesMonoBlock PrettyMonoBlock PrettyNoEscapes
     PrettyNoEscapesMonoBlock PrettySpace PrettySpaceMonoBlock PrettySpaceNoEscapes PrettySpaceNoEscapesMonoBlock
     Vertical Markdown MD Values SQLInsert Null Native RowBinary RowBinaryWithNames RowBinaryWithNamesAndTypes Parquet
     Arrow ArrowStream ORC Avro BSONEachRow MsgPack LineAsString LineAsStringWithNames LineAsStringWithNamesAndTypes Raw
     RawWithNames RawWithNamesAndTypes RawBLOB`,
  ),
);

/**
 * Settings a client may choose, as a URL parameter: how its result is written, nothing about
 * what it may read or where anything goes. Left out: every setting that names a file or a host
 * (format_schema, output_format_schema, format_template_*, format_avro_schema_registry_url) and
 * format_display_secrets_in_show_and_select. A setting not listed is still taken at the value it
 * already has, as a readonly ClickHouse user may; changing it is refused (164).
 */
export const CLIENT_SETTINGS: ReadonlySet<string> = new Set(
  names(
    `output_format_json_quote_64bit_integers output_format_json_quote_64bit_floats output_format_json_quote_denormals
     output_format_json_quote_decimals output_format_json_escape_forward_slashes output_format_json_named_tuples_as_objects
     output_format_json_skip_null_value_in_named_tuples output_format_json_array_of_rows output_format_json_validate_utf8
     output_format_json_pretty_print output_format_json_map_as_array_of_tuples
     output_format_pretty_max_rows output_format_pretty_max_column_pad_width output_format_pretty_max_value_width
     output_format_pretty_color output_format_pretty_grid_charset output_format_pretty_row_numbers
     output_format_pretty_display_footer_column_names output_format_pretty_highlight_digit_groups
     output_format_pretty_fallback_to_vertical output_format_pretty_multiline_fields output_format_pretty_squash_consecutive_ms
     output_format_csv_crlf_end_of_line output_format_tsv_crlf_end_of_line format_csv_delimiter format_csv_null_representation
     format_tsv_null_representation output_format_decimal_trailing_zeros output_format_float_precision
     output_format_parquet_row_group_size output_format_parquet_row_group_size_bytes output_format_parquet_string_as_string
     output_format_parquet_compression_method output_format_parquet_version output_format_parquet_compliant_nested_types
     output_format_arrow_string_as_string output_format_arrow_compression_method output_format_arrow_low_cardinality_as_dictionary
     output_format_orc_string_as_string output_format_orc_compression_method output_format_avro_codec
     output_format_bson_string_as_string output_format_markdown_escape_special_characters output_format_values_escape_quote_with_quote
     output_format_sql_insert_max_batch_size output_format_sql_insert_table_name output_format_sql_insert_include_column_names
     output_format_sql_insert_use_replace output_format_sql_insert_quote_names output_format_enable_streaming
     output_format_parallel_formatting date_time_output_format session_timezone extremes max_block_size
     http_write_exception_in_output_format`,
  ),
);

/** Limits a client may lower, never raise: the policy sets each to its own bound first. */
export const LIMIT_SETTINGS = ['max_execution_time', 'max_result_rows', 'max_result_bytes', 'max_memory_usage', 'max_threads'] as const;

/** Functions that run an aggregate named in a string argument (their first): that name is checked as a function. */
export const AGGREGATE_BY_NAME: ReadonlySet<string> = new Set(names('arrayReduce arrayReduceInRanges initializeAggregation'));
